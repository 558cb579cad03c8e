"""smdebug's named constants with smdebug's values, for code that imports them by name
(``from smdebug.core.config_constants import CONFIG_FILE_PATH_ENV_STR``).

Values only: environment variable names, file names and SageMaker paths that trainscope reads
or writes the same way (docs/compat.md). The alias modules re-export the groups below.
"""

# smdebug.core.config_constants
CLAIM_FILENAME = "claim.smd"
CONFIG_FILE_PATH_ENV_STR = "SMDEBUG_CONFIG_FILE_PATH"
DEFAULT_WORKER_NAME = "worker_0"
DEFAULT_CONFIG_FILE_PATH = "/opt/ml/input/config/debughookconfig.json"
EXPORT_TENSORBOARD_KEY = "export_tensorboard"
TENSORBOARD_DIR_KEY = "tensorboard_dir"
CONFIG_REDUCTION_CONFIGS_KEY = "reduction_configs"
CONFIG_SAVE_CONFIGS_KEY = "save_configs"
CONFIG_OUTDIR_KEY = "LocalPath"
CONFIG_HOOK_PARAMS_KEY = "HookParameters"
CONFIG_COLLECTION_CONFIG_KEY = "CollectionConfigurations"
CONFIG_COLLECTION_NAME_KEY = "CollectionName"
CONFIG_COLLECTION_PARAMS_KEY = "CollectionParameters"
CONFIG_DRYRUN_KEY = "dry_run"
CONFIG_RDN_CFG_KEY = "reduction_config"
CONFIG_INCLUDE_REGEX_KEY = "include_regex"
CONFIG_INCLUDE_WORKERS_KEY = "include_workers"
CONFIG_SAVE_ALL_KEY = "save_all"
TENSORBOARD_CONFIG_FILE_PATH_ENV_STR = "TENSORBOARD_CONFIG_FILE_PATH"
DEFAULT_SAGEMAKER_METRICS_PATH = "SAGEMAKER_METRICS_DIRECTORY"
DEFAULT_SAGEMAKER_OUTDIR = "/opt/ml/output/tensors"
DEFAULT_SAGEMAKER_TENSORBOARD_PATH = "/opt/ml/input/config/tensorboardoutputconfig.json"
DEFAULT_COLLECTIONS_FILE_NAME = "worker_0_collections.json"
CHECKPOINT_CONFIG_FILE_PATH_ENV_VAR = "CHECKPOINT_CONFIG_FILE_PATH"
CHECKPOINT_DIR_KEY = "LocalPath"
DEFAULT_CHECKPOINT_CONFIG_FILE = "/opt/ml/input/config/checkpointconfig.json"
METADATA_FILENAME = "metadata.json"
METADATA_FILENAME_S3_UPLOADED = "metadata.json.sagemaker-uploaded"
LATEST_GLOBAL_STEP_SEEN = "latest-global-step-seen"
LATEST_GLOBAL_STEP_SAVED = "latest-global-step-saved"
LATEST_MODE_STEP = "latest-mode-step"
LOG_DUPLICATION_THRESHOLD = 3
PAPERMILL_EXECUTION_ENV_VAR = "PAPERMILL_EXECUTION"
PROFILER_REPORT_VERSION = "profiler_report_v1"
TRAINING_RUN = "training-run"
INCOMPLETE_STEP_WAIT_WINDOW_KEY = "SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW"
INCOMPLETE_STEP_WAIT_WINDOW_DEFAULT = 1000
MISSING_EVENT_FILE_RETRY_LIMIT_KEY = "SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT"
MISSING_EVENT_FILE_RETRY_LIMIT = 100
TRAINING_END_DELAY_REFRESH_KEY = "SMDEBUG_TRAINING_END_DELAY_REFRESH"
TRAINING_END_DELAY_REFRESH_DEFAULT = 1
CALLABLE_CACHE_ENV_VAR = "SMDEBUG_KERAS_CALLABLE_CACHE_TYPE"
DEFAULT_CALLABLE_CACHE = "CACHE_PER_MODE"
DEFAULT_RESOURCE_CONFIG_FILE = "/opt/ml/input/config/resourceconfig.json"
DEFAULT_SAVED_COLLECTIONS = ["losses"]

# smdebug.core.access_layer.utils
END_OF_JOB_FILENAME = "training_job_end.ts"
ENV_RULE_STOP_SIGNAL_FILENAME = "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE"
DEFAULT_GRACETIME_FOR_RULE_STOP_SEC = 60

# smdebug.core.modes
MODE_STEP_PLUGIN_NAME = "mode_step"
MODE_PLUGIN_NAME = "mode"

# smdebug.profiler.profiler_constants
DEFAULT_PREFIX = "framework/pevents"
DEFAULT_SYSTEM_PROFILER_PREFIX = "system"
TRACE_DIRECTORY_FORMAT = "%Y%m%d%H"
PYTHONTIMELINE_SUFFIX = "pythontimeline.json"
MODELTIMELINE_SUFFIX = "model_timeline.json"
TENSORBOARDTIMELINE_SUFFIX = "trace.json.gz"
HOROVODTIMELINE_SUFFIX = "horovod_timeline.json"
SMDATAPARALLELTIMELINE_SUFFIX = "smdataparallel_timeline.json"
MERGEDTIMELINE_SUFFIX = "merged_timeline.json"
PT_DATALOADER_WORKER = "DataLoaderWorker"
PT_DATALOADER_ITER = "DataLoaderIter"
PT_DATALOADER_INITIALIZE = "DataLoaderIterInitialize"
TF_DATALOADER_ITER = "DataIterator"
ENV_TIME_BUFFER = "TIME_BUFFER_MICROSECONDS"
TIME_BUFFER_DEFAULT = 3 * 60 * 1000 * 1000
ENV_TRAIILING_DURATION = "TRAILING_DURATION_MICROSECONDS"  # smdebug's spelling
TRAILING_DURATION_DEFAULT = 5 * 60 * 1000 * 1000
CONFIG_PATH_DEFAULT = "/opt/ml/input/config/profilerconfig.json"
CONVERT_TO_MICROSECS = 1000000
CONVERT_MICRO_TO_NS = 1000
MAX_FILE_SIZE_DEFAULT = 10485760
CLOSE_FILE_INTERVAL_DEFAULT = 60
FILE_OPEN_FAIL_THRESHOLD_DEFAULT = 50
BASE_FOLDER_DEFAULT = "/opt/ml/output/profiler"
PYTHON_PROFILING_START_STEP_DEFAULT = 9
PROFILING_NUM_STEPS_DEFAULT = 1
PROFILER_DURATION_DEFAULT = float("inf")
TF_METRICS_PREFIX = "aws_marker-"
TF_DATALOADER_START_FLAG_FILENAME = "tf_dataloader_start_flag.tmp"
TF_DATALOADER_END_FLAG_FILENAME = "tf_dataloader_end_flag.tmp"
CPROFILE_STATS_FILENAME = "python_stats"
PYINSTRUMENT_JSON_FILENAME = "python_stats.json"
PYINSTRUMENT_HTML_FILENAME = "python_stats.html"
CPROFILE_NAME = "cprofile"
PYINSTRUMENT_NAME = "pyinstrument"

CONFIG_CONSTANTS = [n for n in list(globals()) if n.isupper() and not n.startswith("_")]

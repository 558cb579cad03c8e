"""smdebug.core.access_layer.s3: importable; S3 is not supported (each use says so)."""

from trainscope.smdebug.s3 import TSAccessS3  # noqa: F401

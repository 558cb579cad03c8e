"""The names of smdebug's S3 access layer, so that code importing them loads; trainscope reads
and writes local trials only, and every use raises SMDebugNotImplementedError saying so."""

from ..exceptions import SMDebugNotImplementedError

_MESSAGE = "S3 access is not supported by trainscope yet: use a local trial folder"


class _NoS3:
    def __init__(self, *args, **kwargs):
        raise SMDebugNotImplementedError(f"{type(self).__name__}: {_MESSAGE}")


class S3Handler(_NoS3):
    @staticmethod
    def _unsupported(*args, **kwargs):
        raise SMDebugNotImplementedError(f"S3Handler: {_MESSAGE}")

    list_prefix = list_prefixes = get_object = get_objects = delete_prefix = delete_prefixes = \
        _unsupported


class ListRequest(_NoS3):
    pass


class ReadObjectRequest(_NoS3):
    pass


class DeleteRequest(_NoS3):
    pass


class TSAccessS3(_NoS3):
    pass


class S3Trial(_NoS3):
    pass


def delete_s3_prefixes(bucket, keys):
    raise SMDebugNotImplementedError(f"delete_s3_prefixes: {_MESSAGE}")

"""smdebug.core.access_layer.s3handler: importable; S3 is not supported (each use says so)."""

from trainscope.smdebug.s3 import DeleteRequest, ListRequest, ReadObjectRequest, S3Handler  # noqa: F401

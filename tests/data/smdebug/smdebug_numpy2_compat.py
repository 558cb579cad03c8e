"""Lets smdebug 1.0.34 write trials under numpy 2.x, patched from the outside.

smdebug 1.0.34 was written for numpy 1.x. Two of its writer paths break under numpy >= 2.3:

1. Encoding a tensor calls ``ndarray.tostring()``, which numpy 2.3 removed (it was an alias of
   ``tobytes()``). Every tensor write fails with AttributeError.
2. Writing a TensorBoard scalar calls ``float()`` on a 1-element 1-d array (``save_scalar`` turns a
   Python float into ``np.array([x])``); numpy 2.x only converts 0-d arrays.

The fix wraps the two functions as ``smdebug.core.writer`` sees them: the array handed to smdebug's
own encoder is a view whose class adds ``tostring`` (returning ``tobytes()``, byte-for-byte what
numpy 1.x returned), and a 1-element scalar is reshaped to 0-d before smdebug converts it.
smdebug's code still does all the encoding, so the bytes on disk are what smdebug 1.0.34 writes
under numpy 1.x.

The reader side of smdebug needs no patch.

Usage: ``import smdebug_numpy2_compat`` (then ``smdebug_numpy2_compat.install()``) before any
trial is written. Idempotent.
"""

import numpy as np

_installed = False


class _ArrayWithToString(np.ndarray):
    """An ndarray view that still answers numpy 1.x's ``tostring()``."""

    def tostring(self, order="C"):
        return self.tobytes(order)


def install():
    """Patches smdebug.core.writer in place; no-op when already done or not needed."""
    global _installed
    if _installed:
        return
    import smdebug.core.writer as writer  # noqa: PLC0415 (import smdebug only when asked)

    if not hasattr(np.ndarray, "tostring"):
        encode = writer.make_tensor_proto

        def make_tensor_proto(nparray_data, tag):
            return encode(nparray_data=np.asarray(nparray_data).view(_ArrayWithToString), tag=tag)

        writer.make_tensor_proto = make_tensor_proto

    summarize = writer.scalar_summary

    def scalar_summary(tag, scalar):
        value = np.asarray(scalar)
        return summarize(tag, value.reshape(()) if value.size == 1 else value)

    writer.scalar_summary = scalar_summary
    _installed = True

"""smdebug.core: its modules alias trainscope's."""

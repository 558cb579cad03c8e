"""smdebug.core.tfevent: of its modules, timeline_file_writer."""

"""Classroom plumbing: the settings and edits as a shareable link (``share``) and the walk-through exported as
Markdown and as a self-checking torch script (``export``)."""

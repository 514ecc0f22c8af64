"""The Markdown documentation, installed as ``imgproc.docs`` package data so that
``imgproc docs cli|augment`` can print it for a pip-installed user."""

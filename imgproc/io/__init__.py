"""Reading and writing images, and the folder runner's stages.

:mod:`.codec` (``load_image``, ``save_image``, ``decode_image``, ``encode_image``: atomic
writes), :mod:`.loader` (decoding with its defences against hostile files) with
:mod:`.deep_colour`, :mod:`.reasons`, :mod:`.native_stderr` and :mod:`.formats`; the folder
run that the command line and :mod:`imgproc.ray` share: :mod:`.run_options`,
:mod:`.folder_plan` (which inputs, which outputs), :mod:`.folder_runner` (decode, batch,
write stages), :mod:`.memory` (the ``--max-memory`` budget) and :mod:`.interrupts` (Ctrl-C
and SIGTERM).
"""

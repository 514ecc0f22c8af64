"""Filters and the convolution engine beneath them.

:mod:`.convolution` (``correlate``/``convolve`` and the choice of lowering) over its
lowerings: :mod:`.separable` (1-D passes and direct 2-D), :mod:`.fft` and :mod:`.pallas`
(the fused GPU kernel); :mod:`.linear` holds the filters built on them (box, Gaussian,
sharpen, unsharp mask, emboss, edges) and their random twins.
"""

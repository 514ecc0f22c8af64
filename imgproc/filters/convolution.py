"""The convolution engine: ``correlate`` and ``convolve`` with scipy.ndimage semantics.

All lowerings work on the internal ``(B, H, W, C)`` float32 array of
:mod:`imgproc.core.arrays` and give the same numbers (tested):

``"separable"``
    1-D shifted sums along H then W for each separable term of the kernel (a Gaussian or
    box has one term; any concrete kernel factors exactly into rank-many terms). A term
    that is a single tap at the centre is the image scaled, with no pass: the sharpen
    kernel is such a term plus a box (:func:`imgproc.kernels.factor`). Borders come from
    static index maps: on CPU the interior is summed and the thin border bands put over
    it (no padded copy of the image); on GPU/TPU
    each pass sums shifted slices of a padded copy, which XLA fuses into the pass
    (:func:`imgproc.filters.separable.pad_first`). The default for separable kernels on CPU and
    TPU (on a GPU see ``"pallas"``).
``"direct"``
    2-D shifted sums over every kernel tap (any kernel, one fused XLA loop).
``"conv"``
    ``lax.conv_general_dilated``, depthwise (``feature_group_count=C``) in NHWC after the
    border extension. The lowering for GPU and TPU (vendor convolution units).
``"convolve2d"``
    ``jax.scipy.signal.convolve2d(..., mode="valid")`` per plane after an explicit border
    extension (it only knows zero fill); the seed chapter's approach.
``"fft"``
    real 2-D FFTs of the extended channel planes and of the kernel, multiplied and
    transformed back (:mod:`imgproc.filters.fft`): any kernel, at a cost that does not grow with
    its size.
``"pallas"``
    each separable term as one fused Pallas (Mosaic GPU) kernel that keeps a tile and its
    halo in shared memory for both passes (:mod:`imgproc.filters.pallas`); concrete weights only.
    Natively on a CUDA GPU; elsewhere in Pallas's GPU interpret mode (slow: for tests).
``"auto"``
    for a kernel that is separable (rank 1), or a centre weight plus a rank-1 kernel (the
    sharpen): ``"separable"`` on CPU and TPU, and on a GPU ``"pallas"`` when the weights are
    concrete and a tile of the image's channels fits (else ``"separable"``); on CPU also
    for a kernel of a few terms whose passes apply clearly fewer weights than one direct
    pass (:func:`low_rank`); otherwise
    ``"direct"`` on CPU and ``"conv"`` on GPU/TPU; on CPU ``"fft"`` instead for a kernel
    whose shifted sums would apply :data:`imgproc.filters.fft.FFT_MIN_TAPS` weights or more for
    each output value (why: benchmarks/NOTES.md, "Lowering choices").
"""

from __future__ import annotations

import functools

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

from imgproc import kernels as _kernels
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import (
    HIGHEST,
    from_bhwc,
    to_bhwc,
    to_compute,
    to_output,
)
from imgproc.core.boundary import folded_taps, pad_bhwc
from imgproc.core.images import check_image
from imgproc.core.registry import NO_HINTS
from imgproc.core.validate import METHODS, check_method, check_mode, check_number, is_traced
from imgproc.cpu import IntoBuffer
from imgproc.filters.fft import FFT_MIN_TAPS, correlate_fft
from imgproc.filters.pallas import correlate_fused, fits, runs_natively
from imgproc.filters.separable import (centre_weight, concrete_values, correlate_direct,
                                       correlate_separable as _correlate_passes)
# "auto": separable passes for kernels with one term that needs passes (rank 1, or a centre
# weight plus rank 1: the sharpen); on CPU also for kernels of a few terms whose passes
# apply clearly fewer weights than one direct 2-D pass (a difference or Laplacian of
# Gaussians: 2-3 terms), see low_rank (benchmarks/NOTES.md, "Low-rank kernels").
MAX_SEPARABLE_TERMS = 1
LOW_RANK_MAX_TERMS = 4
LOW_RANK_MAX_WEIGHTS = 0.8  # the passes' nonzero weights, as a fraction of the kernel's
# the lowerings that run a kernel as its separable terms
TERM_METHODS = ("separable", "pallas", "pallas-if-it-fits")
# What ``auto`` plans on a GPU for a concrete kernel of one separable term: the fused Pallas
# kernel when a tile of the image's channels fits (known when the stage is traced), else
# the separable passes. Never a user's choice (not in METHODS); the same pixels either way.
FUSED_IF_IT_FITS = "pallas-if-it-fits"
_HIGHEST = HIGHEST


def is_concrete(value) -> bool:
    return not is_traced(value)


def odd_kernel(kernel, *, flip: bool = False):
    """Return ``kernel`` as a 2-D float32 array with odd sides and centre at ``size // 2``.

    scipy.ndimage centres an even-length axis at ``size // 2`` for ``correlate`` (a zero is
    appended) and, after flipping, at ``size // 2 - 1`` for ``convolve`` (a zero is
    prepended), which keeps ``origin=0`` semantics for every size.
    """
    concrete = is_concrete(kernel)
    if jnp.iscomplexobj(kernel):  # float32 would drop the imaginary part with only a warning
        raise ValueError(f"kernel must hold real numbers; got {jnp.asarray(kernel).dtype}")
    k = np.asarray(kernel, np.float32) if concrete else jnp.asarray(kernel, jnp.float32)
    if k.ndim != 2 or k.shape[0] == 0 or k.shape[1] == 0:
        raise ValueError(f"kernel must be a non-empty 2-D array; got shape {tuple(k.shape)}")
    if concrete and not np.all(np.isfinite(k)):
        raise ValueError("kernel must hold finite numbers (no NaN or Inf)")
    xp = np if concrete else jnp
    if flip:
        k = k[::-1, ::-1]
    pads = [((1, 0) if flip else (0, 1)) if n % 2 == 0 else (0, 0) for n in k.shape]
    if any(p != (0, 0) for p in pads):
        k = xp.pad(k, pads)
    return k


def _direct(x, k, mode, cval, in_place):
    return correlate_direct(x, k, mode=mode, cval=cval, in_place=in_place)


def _conv(x, k, mode, cval):
    kh, kw = k.shape
    c = x.shape[-1]
    xp = pad_bhwc(x, kh // 2, kw // 2, mode, cval)
    rhs = jnp.broadcast_to(jnp.asarray(k, x.dtype)[:, :, None, None], (kh, kw, 1, c))
    return lax.conv_general_dilated(
        xp,
        rhs,
        window_strides=(1, 1),
        padding="VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=c,
        precision=_HIGHEST,
    )


def _convolve2d(x, k, mode, cval):
    kh, kw = k.shape
    b, h, w, c = x.shape
    xp = pad_bhwc(x, kh // 2, kw // 2, mode, cval)
    planes = jnp.moveaxis(xp, 3, 1).reshape(b * c, h + kh - 1, w + kw - 1)
    flipped = jnp.asarray(k, x.dtype)[::-1, ::-1]  # convolve2d convolves; we correlate
    conv = jax.vmap(lambda p: jax.scipy.signal.convolve2d(p, flipped, mode="valid", precision=_HIGHEST))
    return jnp.moveaxis(conv(planes).reshape(b, c, h, w), 1, 3)


def _fused_fits(x, terms) -> bool:
    """Whether every term of ``terms`` that needs passes has a Pallas tile on ``x``'s
    channels (:func:`imgproc.filters.pallas.fits`), with concrete weights and float32 ``x``."""
    if x.dtype != jnp.float32:
        return False
    for col, row in terms:
        if centre_weight(col, row) is None:
            c, r = concrete_values(col), concrete_values(row)
            if c is None or r is None or not fits(c.size // 2, r.size // 2, x.shape[-1], x.shape[1]):
                return False
    return True


def _fused_term(x, cval, col, row, mode, interpret):
    """One term through the fused Pallas kernel, differentiable: the kernel has no
    derivative rule of its own, and the correlation is linear in ``(x, cval)`` jointly, so
    its derivative is the same correlation of the tangents through the XLA passes (which
    JAX can also transpose, for ``jax.grad``)."""

    @jax.custom_jvp
    def fused(v, c):
        return correlate_fused(v, col, row, mode=mode, cval=c, interpret=interpret)

    @fused.defjvp
    def fused_jvp(primals, tangents):
        (v, c), (tv, tc) = primals, tangents
        return fused(v, c), _separable(tv, ((col, row),), mode, jnp.asarray(tc, tv.dtype), False)

    return fused(x, jnp.asarray(cval, x.dtype))


def _separable(x, terms, mode, cval, in_place, *, finish=None, keep=False, float_rows=False, fused=False,
               interpret=None):
    """Sum of the separable ``terms``; ``fused``: each term that needs passes as one Pallas
    kernel (the ``"pallas"`` lowering) instead of two XLA passes, in Pallas's interpret
    mode when ``interpret`` (``None``: off a GPU, :func:`imgproc.filters.pallas.runs_natively`).
    ``finish``, ``keep``, ``float_rows``: see :func:`run_lowering`."""
    finish = finish if len(terms) == 1 else None
    keep = keep and len(terms) == 1
    interpret = (not runs_natively()) if interpret is None else interpret
    out = None
    for col, row in terms:
        w = centre_weight(col, row)
        if w is not None:  # a centre tap: the image scaled, no pass
            y = x * jnp.asarray(w, x.dtype)
        elif fused:
            y = _fused_term(x, cval, col, row, mode, interpret)
        else:  # outside the image, the vertical pass of a constant cval is cval * sum(col)
            y = _correlate_passes(x, col, row, mode=mode, cval=cval,
                                  cval_after=cval * jnp.sum(jnp.asarray(col)), in_place=in_place,
                                  finish=finish, keep=keep, float_rows=float_rows)
        out = y if out is None else out + y
    return out


def pass_terms(terms) -> int:
    """How many of the separable ``terms`` need passes (a centre tap needs none)."""
    return sum(centre_weight(col, row) is None for col, row in terms)


def run_lowering(x, plan, mode, cval, *, in_place=False, finish=None, keep=False, float_rows=False):
    """Apply a planned correlation (see :func:`plan_lowering`) to the internal float
    ``(B, H, W, C)`` array ``x``. Called inside traced code. ``in_place``: the result
    feeds another stage (:class:`imgproc.core.registry.LoweringHints`); ``finish``: the
    program returns the result after this elementwise function (its cast to the image's
    dtype), which the CPU passes may apply in a last loop of their own
    (:data:`imgproc.filters.separable.COLS_FUSED_MAX_TAPS`). The result is finished already
    exactly when its dtype is no longer ``x``'s. ``keep``: the stage reads the result
    once more, elementwise, and returns what it computes from it (an unsharp mask's
    combination), so the CPU passes may run their last loop on its own as for ``finish``,
    its result in a kept buffer (:func:`imgproc.cpu.output_buffers.scratch`). ``float_rows``:
    the program's loops read ``x`` from float32 values, not from integers converted in
    the same loop (:data:`imgproc.filters.separable.ROWS_SPLIT_MIN_TERMS`)."""
    method, kernel, terms = plan
    kernel, terms = _weights_apart(kernel, terms)
    h, w = x.shape[1:3]  # a kernel larger than the image: its taps folded onto the image's extension
    if kernel is not None:
        kernel = folded_taps(folded_taps(kernel, h, 0, mode), w, 1, mode)
    terms = tuple((folded_taps(col, h, 0, mode), folded_taps(row, w, 0, mode)) for col, row in terms)
    if method == FUSED_IF_IT_FITS:
        if not _fused_fits(x, terms):
            return _separable(x, terms, mode, cval, in_place, finish=finish, keep=keep, float_rows=float_rows)
        # the program may still be compiled for the CPU (arrays put there on a GPU machine,
        # jit(backend="cpu")): the kernel only for CUDA, the passes elsewhere
        return lax.platform_dependent(
            x, jnp.asarray(cval, x.dtype),
            cuda=lambda v, c: _separable(v, terms, mode, c, in_place, fused=True, interpret=False),
            default=lambda v, c: _separable(v, terms, mode, c, in_place))
    if method in TERM_METHODS:
        return _separable(x, terms, mode, cval, in_place, finish=finish, keep=keep, float_rows=float_rows,
                          fused=method == "pallas")
    if method == "direct":
        return _direct(x, kernel, mode, cval, in_place)
    if method == "conv":
        return _conv(x, kernel, mode, cval)
    if method == "fft":
        return correlate_fft(x, _outer_sum(terms) if kernel is None else kernel, mode, cval)
    return _convolve2d(x, kernel, mode, cval)


def _weights_apart(kernel, terms):
    """``(kernel, terms)`` with the weights computed in the program (traced, not NumPy)
    behind one ``lax.optimization_barrier``, so that each kernel reads them computed once.

    Without it XLA:GPU (jax 0.11.2) fuses a traced Gaussian's weights (an exponential
    normalised by its sum, which it takes for a softmax) into the image's passes as one
    Triton kernel from about 400×400 images on, and compiles that for 30 s to minutes
    (``random_gaussian_blur`` of 2×400×400×3: 62-102 s; 1.0 s with the barrier; measured
    off the GPU with ``benchmarks/gpu_compile_offline.py``; benchmarks/NOTES.md, "GPU")."""
    leaves, tree = jax.tree_util.tree_flatten((kernel, terms))
    traced = [i for i, w in enumerate(leaves) if concrete_values(w) is None]
    if traced:
        held = lax.optimization_barrier([leaves[i] for i in traced])
        for i, w in zip(traced, held):
            leaves[i] = w
    return jax.tree_util.tree_unflatten(tree, leaves)


def _stage_fn(image, traced, *, body, layout, static, in_place, cast_after=False, from_integers=False):
    x = to_bhwc(to_compute(image), layout)
    float_rows = jnp.dtype(image.dtype) == jnp.float32 and not from_integers  # what the loops read
    # the body may cast its result to the image's dtype itself when no stage or other
    # work follows it in the program (LoweringHints); what comes back in x's dtype is cast here
    finish = None if in_place or cast_after else functools.partial(to_output, dtype=image.dtype)
    y = body(x, **traced, **dict(static), in_place=in_place, finish=finish, float_rows=float_rows)
    y = from_bhwc(y, image.shape)
    return to_output(y, image.dtype) if y.dtype == x.dtype else y


def apply_stage(body, image, layout, traced=None, *, hints=None, **static):
    """Run ``body(x, **traced, **static)`` as one compiled stage on ``image``.

    ``body`` is a module-level function of the internal float ``(B, H, W, C)`` array;
    ``traced`` holds its array arguments (kernel weights, ``cval``); ``static`` its
    hashable options (kernel sizes, modes, lowerings). The stage converts the image to
    float32 and back to its dtype (rounded and saturated once).
    ``hints.feeds_next`` (:class:`imgproc.core.registry.LoweringHints`) reaches the body as its
    static ``in_place`` argument, and ``finish`` (the cast to the image's dtype) when nothing
    else follows its result (no later stage, no ``hints.cast_after``); both are part of the
    compiled stage's key like the options.

    Called on a traced image (inside ``jax.jit`` or a :class:`~imgproc.Pipeline`) the
    body is traced inline, so concrete weights reach the lowering as constants that XLA
    compiles into the loops. Called eagerly with concrete weights, the stage is compiled
    with the weights as constants too (faster; why: benchmarks/NOTES.md, "Lowering
    choices"), one program per distinct weights, the last :data:`EAGER_PROGRAMS` kept
    (:func:`_constant_stage`): a sweep over sigma compiles once per value and its memory
    stays bounded. Values that are themselves traced (a ``jax.Array`` sigma inside
    ``jit``, ``jax.grad`` with respect to ``cval``) are arguments of one program for all
    their values, the concrete ones still constants (:func:`_partly_constant_stage`).
    """
    static = tuple(sorted(static.items()))
    hints = hints or NO_HINTS
    in_place = hints.feeds_next
    cast_after = hints.cast_after or hints.in_loop  # a per-image loop's body is not the program's output
    traced = traced or {}
    if "cval" in traced and not is_traced(traced["cval"]):  # NaN would fill the border with NaN
        check_number("cval", float(traced["cval"]))
    if isinstance(image, jax.core.Tracer):
        return _stage_fn(image, traced, body=body, layout=layout, static=static, in_place=in_place,
                         cast_after=cast_after, from_integers=hints.from_integers)
    weights, tracers = _weights_key(traced)
    if tracers:  # under a transformation (jax.grad of cval or sigma): the rest still constants
        return _partly_constant_stage(body, layout, static, in_place, cast_after, hints.from_integers,
                                      weights)(image, tracers)
    return _constant_stage(body, layout, static, in_place, cast_after, hints.from_integers, weights)(image)


# Eagerly called stages compiled with their weights as constants, most recently used kept.
EAGER_PROGRAMS = 32


def _weights_key(traced: dict):
    """``(key, tracers)``: a hashable copy of the concrete ``traced`` values (``None`` in
    the place of each traced one) and the traced values, in order."""
    leaves, tree = jax.tree_util.tree_flatten(traced)
    tracers = [v for v in leaves if isinstance(v, jax.core.Tracer)]
    arrays = [None if isinstance(v, jax.core.Tracer) else np.asarray(v) for v in leaves]
    return (tree, tuple(None if a is None else (a.dtype.str, a.shape, a.tobytes()) for a in arrays)), tracers


def _weights(weights, tracers=()):
    """The ``traced`` dict back from :func:`_weights_key`: constants, and ``tracers`` in the
    places of the traced values."""
    tree, leaves = weights
    fill = iter(tracers)
    return jax.tree_util.tree_unflatten(
        tree, [next(fill) if v is None else np.frombuffer(v[2], np.dtype(v[0])).reshape(v[1]) for v in leaves])


@functools.lru_cache(maxsize=EAGER_PROGRAMS)
def _constant_stage(body, layout, static, in_place, cast_after, from_integers, weights):
    return IntoBuffer(functools.partial(_stage_fn, traced=_weights(weights), body=body, layout=layout, static=static,
                                        in_place=in_place, cast_after=cast_after, from_integers=from_integers))


@functools.lru_cache(maxsize=EAGER_PROGRAMS)
def _partly_constant_stage(body, layout, static, in_place, cast_after, from_integers, weights):
    """A stage called with some of its values traced by a transformation around it (the
    image concrete): the concrete ones compiled in as constants, as in
    :func:`_constant_stage` (the ``"pallas"`` lowering needs its weights so), the traced
    ones arguments."""
    def stage(image, tracers):
        return _stage_fn(image, _weights(weights, tracers), body=body, layout=layout, static=static,
                         in_place=in_place, cast_after=cast_after, from_integers=from_integers)

    return jax.jit(stage)


def correlate_body(x, kernel, terms, cval, *, mode, method, in_place, finish, float_rows):
    return run_lowering(x, (method, kernel, terms), mode, cval, in_place=in_place, finish=finish,
                        float_rows=float_rows)


# Inside a per-image loop on CPU (see auto_method): kernels of at most this many separable
# terms run as separable passes, other kernels of at most this many taps as "convolve2d".
LOOP_MAX_SEPARABLE_TERMS = 2
LOOP_CONVOLVE2D_MAX_TAPS = 25


def auto_method(n_terms, backend=None, *, taps=None, in_loop=False, pass_taps=None, low_rank=False) -> str:
    """The lowering ``method="auto"`` picks on ``backend`` (default: the current one) for a
    kernel with ``n_terms`` separable terms that need passes (:func:`pass_terms`; ``None``
    when unknown, e.g. a traced kernel), ``taps`` weights, ``pass_taps`` weights in
    those terms' 1-D passes (their two lengths each, :func:`pass_taps`), and whether its
    terms' passes cost clearly less than a direct pass (``low_rank``, :func:`low_rank`):

    * on CPU, inside a per-image loop (``in_loop``: :class:`imgproc.core.registry.LoweringHints`
      of a stage traced in a ``lax.map`` over images), kernels of at most two such
      terms run as ``"separable"`` passes, which fuse
      with the loop's other stages; other kernels of at most 25 taps as ``"convolve2d"``:
      there XLA lowers the per-plane convolution to its convolution library, faster than
      shifted sums (stand-alone it is much slower, so only there);
    * on CPU, a kernel whose shifted sums (below) would add at least
      :data:`imgproc.filters.fft.FFT_MIN_TAPS` weighted values for each output value (the passes'
      ``pass_taps``, or a direct pass's ``taps``) as ``"fft"``, whose cost does not grow
      with the kernel;
    * kernels of one term that needs passes (rank 1, or a centre weight plus rank 1, whose
      centre term is a scaled copy: :func:`pass_terms`) run as two 1-D passes on CPU and
      TPU (fastest on CPU); on a GPU as the fused Pallas kernel where its tile fits the
      image's channels and the weights are concrete (:data:`FUSED_IF_IT_FITS`; faster than
      the passes there), else as the passes;
    * on CPU (outside a per-image loop), ``low_rank`` kernels run as their terms' passes
      too (a 9×9 difference of Gaussians: 2 terms, 36 weights against 81);
    * other kernels as one direct pass on CPU and as ``lax.conv_general_dilated`` on GPU/TPU.

    (why: benchmarks/NOTES.md, "Lowering choices")
    """
    backend = backend or jax.default_backend()
    cpu = backend == "cpu"
    separable = n_terms is not None and (n_terms <= MAX_SEPARABLE_TERMS or (cpu and low_rank and not in_loop))
    if cpu and in_loop:
        if n_terms is not None and n_terms <= LOOP_MAX_SEPARABLE_TERMS:
            return "separable"
        if taps is not None and taps <= LOOP_CONVOLVE2D_MAX_TAPS:
            return "convolve2d"
    if cpu:
        summed = pass_taps if separable else taps
        if summed is not None and summed >= FFT_MIN_TAPS:
            return "fft"
    if n_terms == 1 and backend == "gpu":
        return FUSED_IF_IT_FITS
    if separable:
        return "separable"
    return "direct" if cpu else "conv"


def low_rank(kernel, terms) -> bool:
    """Whether the concrete ``kernel``'s separable ``terms`` (:func:`kernels.factor`) are
    2 to :data:`LOW_RANK_MAX_TERMS` that need passes, whose nonzero weights are at most
    :data:`LOW_RANK_MAX_WEIGHTS` of the kernel's own (a direct pass skips zero weights,
    and so do the passes)."""
    passes = [(col, row) for col, row in terms if centre_weight(col, row) is None]
    if not 2 <= len(passes) <= LOW_RANK_MAX_TERMS:
        return False
    weights = sum(np.count_nonzero(col) + np.count_nonzero(row) for col, row in passes)
    return weights <= LOW_RANK_MAX_WEIGHTS * np.count_nonzero(kernel)


def pass_taps(terms) -> int:
    """How many weights the 1-D passes of the separable ``terms`` apply for each output
    value: the two lengths of each term that needs passes (:func:`pass_terms`)."""
    return sum(len(col) + len(row) for col, row in terms if centre_weight(col, row) is None)


@callers_type
def correlate(image, kernel, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Correlate each channel of ``image`` with a 2-D ``kernel``.

    Matches ``scipy.ndimage.correlate(image[..., c], kernel, mode=mode, cval=cval)`` for each
    channel ``c`` (``origin=0``; even sides centred at ``size // 2``), to float32 precision.

    Args:
        image: ``(H, W)``, ``(H, W, C)``, ``(N, H, W, C)``, or ``(C, H, W)`` / ``(N, C, H, W)``
            with ``layout="CHW"`` / ``"NCHW"``. dtype uint8, uint16, float16, bfloat16 or
            float32; NumPy or JAX array.
        kernel: 2-D weights (NumPy, or a JAX array, traced values allowed).
        mode: ``"reflect"`` (default), ``"mirror"``, ``"nearest"``, ``"wrap"``, ``"constant"``
            (scipy.ndimage's names), or scipy's aliases ``"grid-mirror"`` (= reflect),
            ``"grid-wrap"`` (= wrap), ``"grid-constant"`` (= constant), which scipy's
            filters compute identically.
        cval: fill value for ``mode="constant"`` (traced: changing it does not recompile).
        layout: ``None`` (infer HW/HWC/NHWC from ndim), ``"HW"``, ``"HWC"``, ``"CHW"``,
            ``"NHWC"``, ``"NCHW"``.
        method: lowering, ``"auto"``, ``"separable"``, ``"direct"``, ``"conv"``,
            ``"convolve2d"``, ``"fft"``, ``"pallas"`` (see :mod:`imgproc.filters.convolution`).
        hints: where the call is traced (:class:`imgproc.LoweringHints`; a pipeline
            passes them): changes how XLA computes the result, never the numbers.

    Returns:
        An array of the image's shape and dtype (integers rounded and saturated), of the
        caller's type: NumPy for NumPy (or list) input, ``jax.Array`` for JAX input
        (:mod:`imgproc.core.array_type`); float64 input is computed in float32 and returned as
        float64.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(16, dtype=np.float32).reshape(4, 4)
        >>> np.asarray(imgproc.correlate(x, np.ones((1, 3)), mode="nearest"))[0].round(4)
        array([1., 3., 6., 8.], dtype=float32)
    """
    return _filter(image, odd_kernel(kernel), mode=mode, cval=cval, layout=layout, method=method, hints=hints)


@callers_type
def convolve(image, kernel, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Convolve each channel of ``image`` with a 2-D ``kernel``: the kernel flipped, then
    :func:`correlate`. Matches ``scipy.ndimage.convolve`` per channel (``origin=0``).
    Arguments as for :func:`correlate`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((3, 3), np.float32); x[1, 1] = 1
        >>> k = np.array([[1, 2, 3]], np.float32)
        >>> np.asarray(imgproc.convolve(x, k, mode="constant"))[1]  # an impulse reproduces k
        array([1., 2., 3.], dtype=float32)
        >>> np.asarray(imgproc.correlate(x, k, mode="constant"))[1]  # correlation mirrors it
        array([3., 2., 1.], dtype=float32)
    """
    return _filter(image, odd_kernel(kernel, flip=True), mode=mode, cval=cval, layout=layout, method=method, hints=hints)


def plan_lowering(kernel, *, terms=None, method="auto", hints=None):
    """Choose the lowering for a correlation, eagerly (before tracing).

    ``kernel``: odd-sided 2-D weights (see :func:`odd_kernel`) or ``None`` when ``terms`` (a
    list of ``(col, row)`` odd-length 1-D weights, possibly traced) describes it. Returns the
    plan ``(method, kernel, terms)`` that :func:`run_lowering` takes; ``method`` is static.
    ``hints.in_loop`` (:class:`imgproc.core.registry.LoweringHints`) reaches :func:`auto_method`.
    """
    check_method(method)
    if terms is None and is_concrete(kernel):
        terms = _kernels.factor(kernel)  # exact: as many terms as the kernel's rank
    if method == "auto":
        taps = np.prod(np.shape(kernel)) if kernel is not None else len(terms[0][0]) * len(terms[0][1])
        concrete = terms is not None and kernel is not None and is_concrete(kernel)
        method = auto_method(None if terms is None else pass_terms(terms), taps=int(taps),
                             in_loop=(hints or NO_HINTS).in_loop, pass_taps=None if terms is None else pass_taps(terms),
                             low_rank=concrete and low_rank(kernel, terms))
        if method == FUSED_IF_IT_FITS and any(concrete_values(w) is None for term in terms for w in term):
            method = "separable"  # the kernel compiles its weights in
    if method in TERM_METHODS and terms is None:
        raise ValueError(
            f"method={method!r} needs a concrete kernel (or its separable terms) to factor; "
            "use method='direct', 'conv' or 'convolve2d' for a traced kernel"
        )
    if method in TERM_METHODS or (method == "fft" and kernel is None):
        return method, None, tuple(terms)  # the FFT's kernel: the terms' outer sum, once they are folded
    if kernel is None:
        kernel = _outer_sum(terms)
    return method, kernel, ()


def apply_plan(image, plan, *, mode, cval, layout, hints=None, fixes=None):
    """Validate ``image``/``mode`` eagerly, then run the planned correlation as one stage.
    ``fixes``: ``(axis, first, second)`` per separable term for scipy's per-axis
    ``"constant"`` border (:func:`per_axis_border`); None: the 2-D border."""
    # the stage is an IntoBuffer program; a NumPy image it reads where it is is checked
    # while the program computes, before the result is handed over
    image, layout, finish_check = check_image(image, layout, read_in_place=True, check_later=True)
    mode = check_mode(mode)
    method, kernel, terms = plan
    traced = {"kernel": kernel, "terms": terms, "cval": jnp.asarray(cval, jnp.float32)}
    if fixes:
        traced["fixes"] = tuple((first, second) for _, first, second in fixes)
        out = apply_stage(scipy_passes_body, image, layout, traced, hints=hints, mode=mode, method=method,
                          axes=tuple(axis for axis, _, _ in fixes))
    else:
        out = apply_stage(correlate_body, image, layout, traced, hints=hints, mode=mode, method=method)
    finish_check()
    return out


def _filter(image, kernel, *, mode, cval, layout, method, hints, terms=None):
    """Shared entry of correlate/convolve: plan eagerly, then :func:`apply_plan`."""
    plan = plan_lowering(kernel, terms=terms, method=method, hints=hints)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout, hints=hints)


def outside_sums(n: int, weights):
    """For each position of an axis of length ``n``: the sum of the centred 1-D correlation
    ``weights`` (odd length; NumPy, or traced) that fall outside ``[0, n)``."""
    r = len(weights) // 2
    reach = np.arange(n)[:, None] + np.arange(-r, r + 1)[None, :]
    outside = ((reach < 0) | (reach >= n)).astype(np.float32)  # static: (n, 2r + 1)
    if is_concrete(weights):
        return outside @ np.asarray(weights, np.float32)
    return jnp.dot(jnp.asarray(outside), jnp.asarray(weights, jnp.float32), precision=_HIGHEST)


def per_axis_border(y, cval, fixes, mode):
    """``y``, a correlation of the ``(B, H, W, C)`` image computed with ``mode="constant"``'s
    2-D semantics (outside the image is ``cval``), turned into scipy's result when it
    applies a separable kernel as 1-D passes one axis after the other, each padding *its
    own input* with ``cval`` (``sobel``, ``prewitt``, ``gaussian_filter`` with ``order``).

    The two differ only in what the second pass reads outside the image: ``cval`` for
    scipy, ``cval * sum(first)`` in 2-D. ``fixes`` lists ``(axis, first, second)`` for each
    separable term: the axis of the second pass (1: H, 2: W), and the first and second
    passes' weights; the result gains ``cval * (1 - sum(first)) * outside_sums(second)``
    along that axis. Nothing changes for other modes or kernels whose first pass sums to 1
    (a Gaussian, a box)."""
    if mode != "constant":
        return y
    for axis, first, second in fixes:
        gain = (1.0 - float(np.sum(np.asarray(first, np.float64)))) if is_concrete(first) else \
            1.0 - jnp.sum(jnp.asarray(first, jnp.float32))
        shape = [1] * y.ndim
        shape[axis] = y.shape[axis]
        y = y + (cval * gain) * jnp.reshape(outside_sums(y.shape[axis], second), shape).astype(y.dtype)
    return y


def scipy_passes_body(x, kernel, terms, cval, fixes, *, mode, method, axes, in_place, finish, float_rows):
    """:func:`correlate_body` with scipy's per-axis ``"constant"`` border
    (:func:`per_axis_border`; ``fixes`` are ``(first, second)`` pairs, ``axes`` their static
    axes)."""
    if mode != "constant":
        return correlate_body(x, kernel, terms, cval, mode=mode, method=method, in_place=in_place, finish=finish,
                              float_rows=float_rows)
    y = run_lowering(x, (method, kernel, terms), mode, cval, in_place=in_place, float_rows=float_rows)
    return per_axis_border(y, cval, [(a, f, s) for a, (f, s) in zip(axes, fixes)], mode)


def _outer_sum(terms):
    """The 2-D kernel of separable ``terms``: NumPy when their weights are, else traced."""
    if all(isinstance(w, np.ndarray) for term in terms for w in term):
        return sum(np.outer(c, r) for c, r in terms).astype(np.float32)
    return sum(jnp.outer(jnp.asarray(c), jnp.asarray(r)) for c, r in terms)

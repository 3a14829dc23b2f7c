r"""Self-attention over an image: every pixel is a token.

An H × W feature map with D channels, X̂ ∈ R^{H×W×D}, is flattened row by row into
X ∈ R^{N×D} with N = H W (pixel (r, c) becomes token n = r W + c), and
self-attention runs on those N tokens: weights softmax(Q Kᵀ / √d_k) ∈ R^{N×N}. Row n
of the weights, folded back to H × W, is the attention map of pixel n over the image.
Here the channels are the pixel's colour (D = 3, R, G, B scaled to [−1, 1]).

Shape legend: H rows, W columns, D channels, N = H W tokens, d_k query/key width.

Sources: seed 003 (003_734755b2d0b981d3.txt) §1.6 (each pixel of an RGB image is a
3-d vector) and its "mathematical form" section (X̂ ∈ R^{H×W×D} flattened to
X ∈ R^{HW×D}, N = HW; Q = X W_Q, K = X W_K, V = X W_V; weights
softmax(Q Kᵀ / √D_QK) ∈ R^{N×N}); Vaswani et al. 2017, eq. 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import sympy as sp
import torch
import torch.nn.functional as F

from attention_core.errors import N_, InputError
from attention_core.fields import Choice, IntRange, label
from attention_core.page import Page
from attention_core.self_attention.functional import SelfAttentionTrace, self_attention
from attention_core.shared_settings import MAX_DIM, MIN_DIM

#: Self-attention over an image: the largest side in pixels (uploads are downscaled to fit).
MAX_IMAGE_SIDE = 16

#: Self-attention over an image: the built-in images (keys of ``image.PATTERNS``), the source
#: that means the user's uploaded image, and the pixels' token features (keys of ``image.FEATURES``).
IMAGE_PATTERNS: tuple[str, ...] = ("smiley", "shapes", "checkerboard", "gradient")

IMAGE_UPLOAD = "upload"

IMAGE_FEATURES: tuple[str, ...] = ("rgb", "projected")

#: Size of the built-in patterns.
PATTERN_SIDE = 12
#: Upload limits: bytes of the file, and pixels of the decoded image (checked before decoding).
MAX_UPLOAD_BYTES = 5 * 1024 * 1024
MAX_UPLOAD_PIXELS = 4096 * 4096  # 16.8 megapixels: a 12-megapixel phone photo fits
#: The upload limit in whole MB, as the uploader states it.
MAX_UPLOAD_MB = MAX_UPLOAD_BYTES // 2**20
#: The file name extensions an upload may have (image_upload.load_upload checks them, then the file's first bytes).
UPLOAD_TYPES = ("png", "jpg", "jpeg")
#: Their MIME types, for the file picker's filter beside the extensions.
UPLOAD_MIME_TYPES = ("image/png", "image/jpeg")
#: How many of a pixel's most-weighted pixels the page lists.
TOP_PIXELS = 5

#: Token features: key -> label (keys declared in ``IMAGE_FEATURES``).
FEATURES: dict[str, str] = {
    "rgb": N_("the colour itself: Q = K = V = X (D = 3)"),
    "projected": N_("projected: Q = X W_q, K = X W_k with seeded W (3 × d_k); V = X"),
}

RGB = tuple[int, int, int]


def _pattern(draw: Callable[[int, int, int], RGB], side: int = PATTERN_SIDE) -> torch.Tensor:
    """A (side, side, 3) uint8 image whose pixel (r, c) is draw(r, c, side)."""
    return torch.tensor([[draw(r, c, side) for c in range(side)] for r in range(side)], dtype=torch.uint8)


def _smiley(r: int, c: int, n: int) -> RGB:
    centre = (n - 1) / 2
    dist = math.hypot(r - centre, c - centre)
    if dist > n / 2 - 0.3:
        return (120, 180, 235)  # sky
    eye_row = round(n * 0.33)
    if r == eye_row and c in (round(n * 0.33), n - 1 - round(n * 0.33)):
        return (40, 30, 20)  # eyes
    mouth = r == round(n * 0.68) and round(n * 0.3) <= c <= n - 1 - round(n * 0.3)
    corners = r == round(n * 0.6) and c in (round(n * 0.25), n - 1 - round(n * 0.25))
    if mouth or corners:
        return (40, 30, 20)
    return (250, 210, 40)  # face


def _checkerboard(r: int, c: int, n: int) -> RGB:
    block = max(n // 4, 1)
    return (20, 20, 20) if (r // block + c // block) % 2 == 0 else (235, 235, 235)


def _gradient(r: int, c: int, n: int) -> RGB:
    t = c / (n - 1)
    return (round(255 * (1 - t)), round(255 * r / (n - 1)), round(255 * t))


def _shapes(r: int, c: int, n: int) -> RGB:
    if 1 <= r <= 4 and 1 <= c <= 4:
        return (220, 40, 40)  # red square
    if math.hypot(r - 7.5, c - 7.5) <= 2.6:
        return (40, 80, 220)  # blue disc
    if 1 <= r <= 3 and 7 <= c <= 10:
        return (220, 40, 40)  # a second red patch
    return (245, 245, 245)


#: Built-in images: key -> (label, pixels (PATTERN_SIDE, PATTERN_SIDE, 3) uint8)
#: (keys declared in ``IMAGE_PATTERNS``).
PATTERNS: dict[str, tuple[str, Callable[[], torch.Tensor]]] = {
    "smiley": (N_("Smiley"), lambda: _pattern(_smiley)),
    "shapes": (N_("Red and blue shapes"), lambda: _pattern(_shapes)),
    "checkerboard": (N_("Checkerboard"), lambda: _pattern(_checkerboard)),
    "gradient": (N_("Colour gradient"), lambda: _pattern(_gradient)),
}


def pattern(key: str) -> torch.Tensor:
    """A built-in image, (H, W, 3) uint8.

    Raises:
        InputError: unknown key.
    """
    if key not in PATTERNS:
        raise InputError(N_("Unknown image “{key}”; pick one of {choices}."), field="image_attention.source",
                         key=key, choices=", ".join(PATTERNS))
    return PATTERNS[key][1]()


# ---------------------------------------------------------------- flattening and attention


def flatten_image(image: torch.Tensor) -> torch.Tensor:
    """(H, W, D) -> (N, D), row by row: pixel (r, c) becomes token n = r W + c."""
    if image.dim() != 3:
        raise InputError(N_("An image must be H × W × D; got shape {shape}."), field="image_attention.source",
                         shape=tuple(image.shape))
    h, w, d = image.shape
    return image.reshape(h * w, d)  # (H, W, D) -> (N, D)


def unflatten_tokens(tokens: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(N, D) -> (H, W, D), the inverse of :func:`flatten_image`; N must equal H W."""
    if tokens.dim() != 2 or tokens.shape[0] != height * width:
        raise InputError(N_("{shape} tokens do not fold into {height} × {width} pixels."), field="image_attention.source",
                         shape=tuple(tokens.shape), height=height, width=width)
    return tokens.reshape(height, width, tokens.shape[1])  # (N, D) -> (H, W, D)


def pixel_features(image: torch.Tensor) -> torch.Tensor:
    """uint8 colours (H, W, 3) -> float32 features in [−1, 1]: x = 2 · rgb / 255 − 1.

    Centred so that a dot product measures colour agreement: black · black = 3 = white · white,
    black · white = −3. (With colours in [0, 1] every pixel would score bright pixels highest.)
    """
    return image.to(torch.float32) / 255.0 * 2.0 - 1.0


def features_to_colours(features: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`pixel_features`, clamped: float (..., 3) in [−1, 1] -> uint8."""
    return ((features.clamp(-1.0, 1.0) + 1.0) / 2.0 * 255.0).round().to(torch.uint8)


@dataclass(frozen=True)
class ImageAttentionTrace:
    """Self-attention over the pixels of one image.

    Attributes:
        image: (H, W, 3) uint8.
        x: the tokens, (N, 3) float32 in [−1, 1].
        features: "rgb" or "projected".
        attention: the :class:`SelfAttentionTrace` (weights (N, N), output (N, 3)).
        output_image: the context vectors as colours, (H, W, 3) uint8.
        torch_max_abs_diff: max |output − F.scaled_dot_product_attention(Q, K, V)|.
        torch_matches: whether they agree to rtol = atol = 1e-5.
    """

    image: torch.Tensor
    x: torch.Tensor
    features: str
    attention: SelfAttentionTrace
    output_image: torch.Tensor
    torch_max_abs_diff: float
    torch_matches: bool

    @property
    def height(self) -> int:
        return self.image.shape[0]

    @property
    def width(self) -> int:
        return self.image.shape[1]

    @property
    def weights(self) -> torch.Tensor:
        """(N, N): row n is how pixel n's query spreads over every pixel."""
        return self.attention.attention.weights

    @property
    def token_count(self) -> int:
        """N = H W, the number of tokens (pixels)."""
        return self.height * self.width

    @property
    def weight_count(self) -> int:
        """N², the number of attention weights."""
        return self.token_count**2

    @property
    def pixel_coordinates(self) -> tuple[tuple[int, int], ...]:
        """(r, c) of token n, for n = 0..N − 1 (row by row: n = r W + c)."""
        return tuple(divmod(n, self.width) for n in range(self.token_count))

    @property
    def token_colours(self) -> torch.Tensor:
        """Each token's colour, (N, 3) uint8: the image read row by row."""
        return self.image.reshape(-1, 3)  # (H, W, 3) -> (N, 3)

    def attention_map(self, row: int, col: int) -> torch.Tensor:
        """Pixel (row, col)'s weights over the image, (H, W); they sum to 1.

        Raises:
            IndexError: the pixel is outside the image.
        """
        if not (0 <= row < self.height and 0 <= col < self.width):
            raise IndexError(f"pixel ({row}, {col}) is outside {self.height} × {self.width}")
        return self.weights[row * self.width + col].reshape(self.height, self.width)  # (N,) -> (H, W)


def image_attention(image: torch.Tensor, features: str = "rgb", d_k: int = 3, seed: int = 0) -> ImageAttentionTrace:
    """Self-attention with each pixel of ``image`` as a token.

    Args:
        image: (H, W, 3) uint8, at most MAX_IMAGE_SIDE on each side, at least 2 pixels.
        features: "rgb": Q = K = V = X; "projected": Q = X W_q, K = X W_k with W_q, W_k drawn
            N(0, 1/3) (so q has about unit variance) from a generator seeded ``seed``, and V = X,
            so the output is still a colour per pixel.
        d_k: the width of q and k when projected (ignored for "rgb", where it is 3).
        seed: the seed of the projection.

    Returns:
        The :class:`ImageAttentionTrace`.

    Raises:
        InputError: a wrong shape or dtype, too large or too small, unknown features, d_k < 1.
    """
    if image.dim() != 3 or image.shape[2] != 3 or image.dtype != torch.uint8:
        raise InputError(N_("An image must be H × W × 3 colours (0..255)."), field="image_attention.source")
    h, w, _ = image.shape
    if h > MAX_IMAGE_SIDE or w > MAX_IMAGE_SIDE:
        raise InputError(N_("The image is {h} × {w}; the page shows at most {side} × {side}."), field="image_attention.source",
                         h=h, w=w, side=MAX_IMAGE_SIDE)
    if h * w < 2:
        raise InputError(N_("The image needs at least two pixels."), field="image_attention.source")
    if features not in FEATURES:
        raise InputError(N_("Unknown token features “{features}”; pick one of {choices}."), field="image_attention.features",
                         features=features, choices=", ".join(FEATURES))
    x = flatten_image(pixel_features(image))  # (H, W, 3) -> (N, 3)
    if features == "rgb":
        w_query = w_key = w_value = torch.eye(3)
    else:
        if d_k < 1:
            raise InputError(N_("d_k must be at least 1; got {d_k}."), field="image_attention.d_k", d_k=d_k)
        g = torch.Generator().manual_seed(seed)
        w_query = torch.randn(3, d_k, generator=g) / math.sqrt(3.0)  # (3, d_k)
        w_key = torch.randn(3, d_k, generator=g) / math.sqrt(3.0)
        w_value = torch.eye(3)  # V = X: the output stays a colour
    trace = self_attention(x, w_query, w_key, w_value)  # weights (N, N), output (N, 3)
    att = trace.attention
    reference = F.scaled_dot_product_attention(att.query, att.key, att.value)
    return ImageAttentionTrace(
        image=image, x=x, features=features, attention=trace,
        output_image=features_to_colours(unflatten_tokens(trace.output, h, w)),
        torch_max_abs_diff=float((trace.output - reference).abs().max()),
        torch_matches=bool(torch.allclose(trace.output, reference, rtol=1e-5, atol=1e-5)),
    )


# ---------------------------------------------------------------- one pixel, and the reshape as a formula


def clamp_pixel(row: int, col: int, height: int, width: int) -> tuple[int, int]:
    """(row, col) moved inside a height × width image (another image may be smaller).

    Raises:
        InputError: an image side below 1.
    """
    if height < 1 or width < 1:
        raise InputError(N_("The image needs at least two pixels."), field="image_attention.source")
    return min(max(row, 0), height - 1), min(max(col, 0), width - 1)


@dataclass(frozen=True)
class PixelView:
    """One pixel as a query: where it looks, and its most-weighted pixels.

    Shape legend (as the module's): H × W image, N = H W tokens, k = min(top, N) listed pixels.

    Attributes:
        row, col: the pixel.
        token: its token index n = r W + c (the row of the N × N weights).
        colour: its (R, G, B), 0..255.
        attention_map: its weights over the image, (H, W) float32; they sum to 1.
        top_pixels: the k pixels it weighs most, largest first, as (r, c).
        top_tokens: their token indices n, (k,).
        top_colours: their colours, (k,) of (R, G, B).
        top_weights: their weights, (k,) floats.
        uniform_weight: 1 / N, each pixel's weight if the attention were spread evenly.

    Source: seed 003 (003_734755b2d0b981d3.txt), "mathematical form": X̂ (H × W × D) read as N = H W tokens.
    """

    row: int
    col: int
    token: int
    colour: tuple[int, int, int]
    attention_map: torch.Tensor
    top_pixels: tuple[tuple[int, int], ...]
    top_tokens: tuple[int, ...]
    top_colours: tuple[tuple[int, int, int], ...]
    top_weights: tuple[float, ...]
    uniform_weight: float


def pixel_view(trace: ImageAttentionTrace, row: int, col: int, top: int = TOP_PIXELS) -> PixelView:
    """Pixel (row, col) of ``trace`` as a query (see :class:`PixelView`).

    Raises:
        IndexError: the pixel is outside the image (move it inside with :func:`clamp_pixel`).
        InputError: top below 1.
    """
    if top < 1:
        raise InputError(N_("List at least one pixel; got {top}."), field="image_top", top=top)
    heat = trace.attention_map(row, col)  # (H, W); raises IndexError outside the image
    best = heat.flatten().topk(min(top, trace.token_count))  # (k,) values and indices, largest first
    tokens = tuple(best.indices.tolist())
    pixels = tuple(divmod(n, trace.width) for n in tokens)
    return PixelView(
        row=row, col=col, token=row * trace.width + col, colour=tuple(trace.image[row, col].tolist()),
        attention_map=heat, top_pixels=pixels, top_tokens=tokens,
        top_colours=tuple(tuple(trace.image[r, c].tolist()) for r, c in pixels),
        top_weights=tuple(best.values.tolist()), uniform_weight=1 / trace.token_count,
    )


class _In(sp.Function):
    """a ∈ b, printed as such (a display relation: sympy never evaluates it)."""

    def _latex(self, printer, exp=None):
        element, space = self.args
        return r"%s \in %s" % (printer._print(element), printer._print(space))


@lru_cache(maxsize=1024)
def reshape_latex(height: int, width: int) -> str:
    r"""X̂ ∈ ℝ^{H×W×3} → X ∈ ℝ^{N×3}, N = H W with the numbers, as LaTeX (seed 003's "mathematical form").

    Built with sympy: the shapes are unevaluated products, N = H W is computed by sympy. Cached per size.

    Raises:
        InputError: a side below 1.
    """
    if height < 1 or width < 1:
        raise InputError(N_("The image needs at least two pixels."), field="image_attention.source")
    h, w, channels = sp.Integer(height), sp.Integer(width), sp.Integer(3)
    n = h * w
    reals = sp.Symbol(r"\mathbb{R}")
    image = _In(sp.Symbol(r"\hat{X}"), sp.Pow(reals, sp.Mul(h, w, channels, evaluate=False), evaluate=False))
    tokens = _In(sp.Symbol("X"), sp.Pow(reals, sp.Mul(n, channels, evaluate=False), evaluate=False))
    count = " = ".join([sp.latex(sp.Symbol("N")), sp.latex(sp.Mul(*sp.symbols("H W"))),
                        sp.latex(sp.Mul(h, w, evaluate=False), mul_symbol="dot"), sp.latex(n)])
    return r"%s \;\longrightarrow\; %s,\qquad %s" % (sp.latex(image, mul_symbol="times"),
                                                       sp.latex(tokens, mul_symbol="times"), count)


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class ImageAttentionSettings:
    """The image attention page's own settings (``settings.image_attention``).

    Attributes:
        source: one of IMAGE_PATTERNS, or IMAGE_UPLOAD ("upload") for the uploaded image (kept by the page as a small
            array; the page falls back when there is none).
        row, col: the query pixel (0-based, < MAX_IMAGE_SIDE; the page clamps them to the image).
        features: the pixels' token features (one of IMAGE_FEATURES).
        d_k: the width of the projected queries and keys (MIN_DIM..MAX_DIM).
    """

    source: str = "smiley"
    row: int = 4
    col: int = 4
    features: str = "rgb"
    d_k: int = 3


IMAGE_ATTENTION = Page(
    key="image_attention", title=N_("Self-attention over an image"), icon=":material/image:", section="experiments",
    summary=N_("Self-attention over an image: every pixel a token"),
    settings=ImageAttentionSettings,
    fields=(
        Choice("source", IMAGE_PATTERNS + (IMAGE_UPLOAD,), N_("Unknown image “{raw}”; using “{value}”.")),
        IntRange("row", 0, MAX_IMAGE_SIDE - 1, label(N_("The pixel's row"))),
        IntRange("col", 0, MAX_IMAGE_SIDE - 1, label(N_("The pixel's column"))),
        Choice("features", IMAGE_FEATURES, N_("Unknown kind of pixel token “{raw}”; using “{value}”.")),
        IntRange("d_k", MIN_DIM, MAX_DIM, "d_k"),
    ),
    legacy={"image_source": "source", "image_row": "row", "image_col": "col", "image_features": "features", "image_d_k": "d_k"},
)

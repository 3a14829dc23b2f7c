"""The experiment pages' shared pieces: cached sampling, the image upload, small text helpers.

Caches take plain values (``st.cache_data``; the scaling experiment a shared store of its own, see
:func:`scaling_experiment`); the uploaded image is kept in session state
only as its small decoded array (at most 16 × 16 × 3 numbers), never as the file.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Optional

import streamlit as st
import torch

from attention_core.errors import N_, InputError, Message
from attention_core.lessons.image_attention import page as image_core
from attention_core.lessons.image_attention import upload as image_upload
from attention_core.lessons.positional_encoding import page as positional
from attention_core.lessons.why_sqrt_dk import page as scaling
from ui import heatmaps, presenter, runtime, state, widgets
from ui.i18n import _

_UPLOAD = "img_upload"  # {"name", "format", "original_size", "pixels": nested lists (h, w, 3)}
_UPLOAD_ERROR = "img_upload_error"  # a Message (translated when shown)
_UPLOADER_VERSION = "img_uploader_version"


#: How many scaling experiments the server keeps, shared by every session. Each is a dozen G-long tensors (~8 kB, ~4 MB
#: when full), so every combination a class tries stays kept (with 32, a class walking the page's four widgets missed
#: again and again; every miss is ~0.1 s of torch).
SHARED_EXPERIMENTS = 512
_EXPERIMENTS: collections.OrderedDict = collections.OrderedDict()  # (samples, keys, seed, distribution) -> result
_EXPERIMENTS_LOCK = threading.Lock()


def scaling_experiment(samples: int, keys: int, seed: int, distribution: str) -> scaling.ScalingExperiment:
    """``scaling.run_scaling_experiment``, kept per server on its plain arguments and shared read-only.

    A miss costs ~0.1–0.5 s of torch, which lets go of Python's lock: the run steps aside for it
    (``runtime.step_aside``), so the class's other clicks are answered meanwhile instead of queueing behind it. The
    spinner is shown here, so that its text is in the session's language.

    Raises:
        InputError: an unknown distribution (from ``scaling``).
    """
    key = (samples, keys, seed, distribution)
    with _EXPERIMENTS_LOCK:
        result = _EXPERIMENTS.get(key)
        if result is not None:
            _EXPERIMENTS.move_to_end(key)
            return result
    with st.spinner(_("Sampling q and k …")), runtime.step_aside():
        result = scaling.run_scaling_experiment(samples, keys, seed, distribution)
    with _EXPERIMENTS_LOCK:
        _EXPERIMENTS[key] = result
        while len(_EXPERIMENTS) > SHARED_EXPERIMENTS:
            _EXPERIMENTS.popitem(last=False)
    return result


@st.cache_data(show_spinner=False, max_entries=64)
def image_attention(pixels: bytes, height: int, width: int, features: str, d_k: int,
                    seed: int) -> image_core.ImageAttentionTrace:
    """``image.image_attention`` cached on plain values (the pixels as H·W·3 bytes).

    Picking another pixel then costs nothing: the N × N weights are already there.
    """
    image = torch.frombuffer(bytearray(pixels), dtype=torch.uint8).view(height, width, 3)
    return image_core.image_attention(image, features, d_k, seed)


@st.cache_data(show_spinner=False, max_entries=16)
def sinusoidal_pattern(positions: int, width: int) -> positional.SinusoidalPattern:
    """``positional.sinusoidal_pattern`` (the table, checked against the math.sin/cos loop), cached."""
    return positional.sinusoidal_pattern(positions, width)


#: The width of the main area that panels side by side may fill (a 1400 px screen with the sidebar).
MAIN_WIDTH_PX = 1000


def side_by_side(widths: list[int]) -> tuple[list[Any], bool]:
    """Containers for panels of about ``widths`` pixels: columns when they fit the main area, else
    one under the other (a heatmap squeezed into a narrow column is cut off).

    Returns:
        (containers, stacked).
    """
    if sum(widths) <= MAIN_WIDTH_PX * presenter.scale():  # presenter mode: wider heatmaps, a wider main area
        return list(st.columns(widths)), False
    return [st.container() for _width in widths], True


#: About how wide the colour legend of ``heatmaps.heatmap`` is.
LEGEND_PX = 60


def heatmap_width(columns: int, row_labels: bool = True, legend: bool = False, extra: int = 0) -> int:
    """About how wide ``heatmaps.heatmap`` draws a matrix with ``columns`` columns.

    ``legend`` adds the colour legend; ``extra`` pixels fit longer (> 0) or shorter (< 0) row labels. In presenter
    mode everything is ``presenter.SCALE`` times wider.
    """
    scale = presenter.scale()
    return columns * heatmaps.cell_px(columns, scale) + round(((150 if row_labels else 40) + (LEGEND_PX if legend else 0)
                                                              + extra) * scale)


def table_height(rows: int) -> int:
    """The height in pixels of ``st.dataframe`` showing ``rows`` rows and its header, without a scroll bar."""
    return 36 * (rows + 1) + 3


def check_line(text: str, ok: bool) -> None:
    """A check that is not against PyTorch (e.g. against a plain Python loop); ``text`` is already translated."""
    if ok:
        st.success(text + " ✓", icon=":material/check_circle:")
    else:
        st.error(_("{check} — they disagree.", check=text), icon=":material/cancel:")


# ---------------------------------------------------------------- the uploaded image


#: The uploader's ``type``: what the file picker offers and a dropped file must match. The MIME types are there for
#: the server's sake: with only extensions, Streamlit checks an uploaded file's name itself when the uploader's value
#: is read, before the page runs (streamlit/elements/lib/file_uploader_utils.py, ``enforce_filename_restriction``),
#: and a name the picker would have refused (a modified client's "notes.txt") replaced the page with its
#: StreamlitAPIException. With a MIME type among them it leaves the name to the app: ``image_upload.load_upload``
#: refuses it with the page's message, as it refuses a renamed file by its first bytes.
UPLOADER_TYPES = [*image_core.UPLOAD_MIME_TYPES, *image_core.UPLOAD_TYPES]


def uploaded_image() -> Optional[dict]:
    """The decoded upload of this session ({"name", "format", "original_size", "pixels"}), or None."""
    return st.session_state.get(_UPLOAD)


def uploaded_pixels() -> Optional[torch.Tensor]:
    upload = uploaded_image()
    return None if upload is None else torch.tensor(upload["pixels"], dtype=torch.uint8)


def upload_error() -> Optional[Message]:
    """Why the last upload was refused (English, with its template for translation), or None."""
    return st.session_state.get(_UPLOAD_ERROR)


def uploader_key() -> str:
    """The uploader's widget key; a new one after every upload, which drops the file from the session."""
    return f"img_uploader_{st.session_state.get(_UPLOADER_VERSION, 0)}"


def receive_upload(key: str) -> None:
    """The uploader's callback: check and decode the file, keep only the small array.

    On success the page switches to the uploaded image and its centre pixel; on failure the
    message is kept for the page and everything else stays as it was.
    """
    file = st.session_state.get(key)
    if file is None:
        return
    st.session_state[_UPLOADER_VERSION] = st.session_state.get(_UPLOADER_VERSION, 0) + 1  # drop the file
    try:
        image_upload.check_upload_size(file.size, file.name)  # don't even read a file that is too large
    except InputError as error:
        st.session_state[_UPLOAD_ERROR] = error.message
        return
    try:
        result = image_upload.load_upload(file.getvalue(), file.name)
    except InputError as error:
        st.session_state[_UPLOAD_ERROR] = Message(N_("“{name}”: {error}"), name=file.name, error=error.message)
        return
    st.session_state.pop(_UPLOAD_ERROR, None)
    st.session_state[_UPLOAD] = {
        "name": file.name, "format": result.format, "original_size": result.original_size,
        "pixels": result.pixels.tolist(),
    }
    row, col = result.centre
    state.update(**{"image_attention.source": "upload", "image_attention.row": row, "image_attention.col": col})


def show_upload_error() -> None:
    if message := upload_error():
        st.error(widgets.message_markdown(message), icon=":material/error:")

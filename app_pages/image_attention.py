"""Self-attention over an image: every pixel a token (H × W × D -> N × D); pick a pixel, see where it looks."""

import pandas as pd
import streamlit as st

from attention_core import image
from attention_core.errors import InputError
from attention_core.settings import MAX_DIM, MIN_DIM
from ui import charts, experiments, state, widgets

st.title("Self-attention over an image")
st.markdown(
    "Self-attention does not need words. Take an image, make **every pixel a token** — its colour is a "
    "3-number vector (R, G, B) — and let every pixel attend to every other pixel. *(Seed 003 §1.6: an "
    "H × W × D feature map read as N = H W vectors.)*"
)
widgets.show_messages()

upload = experiments.uploaded_image()
if state.settings().image_source == "upload" and upload is None:
    state.update(image_source="smiley")  # a session that lost its upload (e.g. a new server process)
settings = state.settings()
sources = list(image.PATTERNS) + (["upload"] if upload is not None else [])


def source_label(key: str) -> str:
    if key == "upload":
        return f"Your image: {upload['name']}"
    return image.PATTERNS[key][0]


c1, c2 = st.columns([1, 1])
with c1:
    state.bind(st.selectbox, "Image", "image_source", options=sources, format_func=source_label)
with c2:
    st.file_uploader(
        f"…or upload a PNG or JPEG (at most {image.MAX_UPLOAD_BYTES // 2**20} MB; shrunk to fit "
        f"{image.MAX_SIDE} × {image.MAX_SIDE} pixels)",
        type=list(image.UPLOAD_TYPES), key=(key := experiments.uploader_key()),
        on_change=experiments.receive_upload, args=(key,), max_upload_size=image.MAX_UPLOAD_BYTES // 2**20,
    )
    experiments.show_upload_error()
    if upload is not None and settings.image_source == "upload":
        w0, h0 = upload["original_size"]
        px = upload["pixels"]
        st.caption(f"{widgets.md_escape(upload['name'])}: a {w0} × {h0} {upload['format']}, shrunk to "
                   f"{len(px[0])} × {len(px)} pixels. Only those pixels are kept, not the file.")

pixels = experiments.uploaded_pixels() if settings.image_source == "upload" else image.pattern(settings.image_source)
height, width = pixels.shape[:2]
if settings.image_row >= height or settings.image_col >= width:
    state.update(image_row=min(settings.image_row, height - 1), image_col=min(settings.image_col, width - 1))
    settings = state.settings()

c1, c2, c3 = st.columns([2, 1, 1])
with c1:
    state.bind(st.radio, "Each pixel's token", "image_features", options=list(image.FEATURES),
               format_func=image.FEATURES.get)
with c2:
    state.bind(st.number_input, "d_k (projected)", "image_d_k", step=1, disabled=settings.image_features == "rgb",
               help=f"{MIN_DIM} to {MAX_DIM}: the width of q and k when projected.")
with c3:
    state.bind(st.number_input, "Seed of W_q, W_k", "experiment_seed", step=1,
               disabled=settings.image_features == "rgb")

try:
    trace = experiments.image_attention(pixels.contiguous().numpy().tobytes(), height, width, settings.image_features,
                                        settings.image_d_k, settings.experiment_seed)
except InputError as error:
    widgets.show_error(error)
    st.stop()
row, col = settings.image_row, settings.image_col
n = row * width + col

st.header("Pick a pixel, see where it looks")
p1, p2, p3 = st.columns([1, 1, 2])
with p1:
    state.bind(st.selectbox, "Pixel row r", "image_row", options=list(range(height)))
with p2:
    state.bind(st.selectbox, "Pixel column c", "image_col", options=list(range(width)))
with p3:
    st.markdown(f"Pixel ({row}, {col}) is token **n = r · W + c = {row} · {width} + {col} = {n}**, "
                f"colour {tuple(trace.image[row, col].tolist())}.")


def pick(r: int, c: int) -> None:
    state.update(image_row=r, image_col=c)


left, right = st.columns(2)
with left:
    st.markdown("**The image** (click a pixel)")
    charts.image(trace.image, key=f"img_pick_{settings.image_source}_{row}_{col}", selected=(row, col),
                 on_pixel=pick, size_px=380)
with right:
    st.markdown(f"**Where pixel ({row}, {col}) looks**: its row of the weights, in red over the image")
    charts.image(trace.image, key="img_heat", selected=(row, col), weights=trace.attention_map(row, col),
                 grayscale=True, size_px=380)

heat = trace.attention_map(row, col)
top = heat.flatten().topk(min(5, height * width))
top_rows = pd.DataFrame({
    "pixel (r, c)": [f"({k // width}, {k % width})" for k in top.indices.tolist()],
    "token n": top.indices.tolist(),
    "colour": [str(tuple(trace.image[k // width, k % width].tolist())) for k in top.indices.tolist()],
    "weight": [f"{w:.4f}" for w in top.values.tolist()],
})
left, right = st.columns(2)
with left:
    st.markdown("**The output**: every pixel's context vector, as a colour")
    charts.image(trace.output_image, key="img_output", selected=(row, col), size_px=380)
with right:
    st.markdown(f"**The {len(top_rows)} pixels it weighs most** (of {height * width}; uniform would be "
                f"{1 / (height * width):.4f} each)")
    st.dataframe(top_rows, hide_index=True)
    if settings.image_features == "rgb":
        st.markdown("With the colour itself as query and key, q · k is large when two colours agree: "
                    "a pixel looks at pixels of **its own colour**, wherever they are in the image. Nothing "
                    "tells it which pixels are near (no positional encoding), unlike a convolution's window.")
    else:
        st.markdown(f"With random W_q, W_k (3 × {settings.image_d_k}), “similar” means whatever those "
                    "projections make it mean. Training learns W so that the useful pixels score high.")
    st.markdown("The output colour of a pixel is the weighted average of the colours it looks at (V = X).")

st.header("From H × W × D to N × D")
st.latex(r"\hat{X} \in \mathbb{R}^{%d \times %d \times 3} \;\longrightarrow\; X \in \mathbb{R}^{%d \times 3},"
         r"\qquad N = H W = %d \cdot %d = %d" % (height, width, height * width, height, width, height * width))
st.markdown("The pixels are read row by row: pixel (r, c) becomes token n = r · W + c. Each token's vector is "
            "its colour scaled to [−1, 1] (x = 2 · rgb / 255 − 1), so that black · black and white · white score "
            "high and black · white low. The weights are then N × N: "
            f"{height * width} × {height * width} = {(height * width) ** 2:,} numbers for this small image.")
g1, g2 = st.columns([1, 1])
with g1:
    show_numbers = st.toggle("Write the token numbers n on the image", key="img_numbers", value=True)
    charts.image(trace.image, key="img_grid", selected=(row, col), numbers=show_numbers, size_px=400)
with g2:
    x = trace.x
    flat = trace.image.reshape(-1, 3)
    tokens = pd.DataFrame({
        "n": range(height * width),
        "(r, c)": [f"({k // width}, {k % width})" for k in range(height * width)],
        "R": flat[:, 0].tolist(), "G": flat[:, 1].tolist(), "B": flat[:, 2].tolist(),
        "x₁": x[:, 0].tolist(), "x₂": x[:, 1].tolist(), "x₃": x[:, 2].tolist(),
    })
    st.markdown(f"**X: {height * width} rows (tokens) × 3 columns**")
    st.dataframe(tokens, hide_index=True, height=400,
                 column_config={c: st.column_config.NumberColumn(c, format="%+.3f") for c in ("x₁", "x₂", "x₃")})

if st.toggle("Show all N × N attention weights", key="img_all_weights"):
    st.caption("Row n is pixel n's attention over every pixel (the middle picture above, unrolled).")
    charts.pattern(trace.weights, key="img_weights", row_title="query pixel n", col_title="key pixel n")

widgets.torch_check(trace.torch_max_abs_diff, trace.torch_matches,
                    "torch.nn.functional.scaled_dot_product_attention(Q, K, V)")
experiments.show_code(image.flatten_image, image.image_attention)

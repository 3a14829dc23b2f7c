"""Self-attention over an image: every pixel a token (H × W × D -> N × D); pick a pixel, see where it looks."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.image_attention import page as image
from ui import charts, experiments, frames, page_body, state, widgets
from ui.i18n import _


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Self-attention over an image"))
    st.markdown(_(
        "Self-attention does not need words. Take an image, make **every pixel a token** — its colour is a "
        "3-number vector (R, G, B) — and let every pixel attend to every other pixel. *(Hung-yi Lee's Transformer "
        "lecture, on self-attention for images: an H × W × D feature map read as N = H W vectors.)*"
    ))


def page() -> None:
    widgets.show_messages()

    upload = experiments.uploaded_image()
    if state.settings().image_attention.source == "upload" and upload is None:
        state.update(**{"image_attention.source": "smiley"})  # a session that lost its upload (e.g. a new server process)
    settings = state.settings()
    sources = list(image.PATTERNS) + (["upload"] if upload is not None else [])


    # Labels are translated here, not inside format_func: the function is also called outside the page's run.
    source_labels = {key: _(label) for key, (label, _draw) in image.PATTERNS.items()}
    if upload is not None:
        source_labels["upload"] = _("Your image: {name}", name=upload["name"])

    c1, c2 = st.columns([1, 1])
    with c1:
        state.bind(st.selectbox, _("Image"), "image_attention.source", options=sources, format_func=source_labels.get)
    with c2:
        st.file_uploader(
            _("…or upload a PNG or JPEG (at most {limit} MB; shrunk to fit {side} × {side} pixels)",
              limit=image.MAX_UPLOAD_MB, side=image.MAX_IMAGE_SIDE),
            type=experiments.UPLOADER_TYPES, key=(key := experiments.uploader_key()),
            on_change=experiments.receive_upload, args=(key,), max_upload_size=image.MAX_UPLOAD_MB,
        )
        experiments.show_upload_error()
        if upload is not None and settings.image_attention.source == "upload":
            w0, h0 = upload["original_size"]
            px = upload["pixels"]
            st.caption(_("{name}: a {w0} × {h0} {format}, shrunk to {w} × {h} pixels. Only those pixels are kept, "
                         "not the file.", name=widgets.md_escape(upload["name"]), w0=w0, h0=h0, format=upload["format"],
                         w=len(px[0]), h=len(px)))

    pixels = experiments.uploaded_pixels() if settings.image_attention.source == "upload" else image.pattern(settings.image_attention.source)
    height, width = pixels.shape[:2]
    row, col = widgets.build_or_stop(image.clamp_pixel, settings.image_attention.row, settings.image_attention.col, height, width)
    widgets.keep_in_range(**{"image_attention.row": row, "image_attention.col": col})  # another image may be smaller

    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        state.bind(st.radio, _("Each pixel's token"), "image_attention.features", options=list(image.FEATURES),
                   format_func={k: _(label) for k, label in image.FEATURES.items()}.get)
    with c2:
        state.bind(st.number_input, _("d_k (projected)"), "image_attention.d_k", step=1, disabled=settings.image_attention.features == "rgb",
                   help=state.range_help("image_attention.d_k", N_("{low} to {high}: the width of q and k when projected.")))
    with c3:
        state.bind(st.number_input, _("Seed of W_q, W_k"), "experiment_seed", step=1,
                   disabled=settings.image_attention.features == "rgb")

    trace = widgets.build_or_stop(experiments.image_attention, pixels.contiguous().numpy().tobytes(), height, width,
                                  settings.image_attention.features, settings.image_attention.d_k, settings.experiment_seed)
    pixel = image.pixel_view(trace, row, col)

    st.header(_("Pick a pixel, see where it looks"))
    p1, p2, p3 = st.columns([1, 1, 2])
    with p1:
        state.bind(st.selectbox, _("Pixel row r"), "image_attention.row", options=list(range(height)))
    with p2:
        state.bind(st.selectbox, _("Pixel column c"), "image_attention.col", options=list(range(width)))
    with p3:
        st.markdown(_("Pixel ({row}, {col}) is token **n = r · W + c = {row} · {width} + {col} = {n}**, colour {rgb}.",
                      row=row, col=col, width=width, n=pixel.token, rgb=pixel.colour))


    def pick(r: int, c: int) -> None:
        state.update(**{"image_attention.row": r, "image_attention.col": c})


    left, right = st.columns(2)
    with left:
        st.markdown(_("**The image** (click a pixel)"))
        charts.image(trace.image, key=f"img_pick_{settings.image_attention.source}_{row}_{col}", selected=(row, col),
                     on_pixel=pick, size_px=380)
    with right:
        st.markdown(_("**Where pixel ({row}, {col}) looks**: its row of the weights, in red over the image",
                      row=row, col=col))
        charts.image(trace.image, key="img_heat", selected=(row, col), weights=pixel.attention_map,
                     grayscale=True, size_px=380)

    top_rows = frames.table({
        _("pixel (r, c)"): [f"({r}, {c})" for r, c in pixel.top_pixels],
        _("token n"): list(pixel.top_tokens),
        _("colour"): [str(colour) for colour in pixel.top_colours],
        _("weight"): [f"{w:.4f}" for w in pixel.top_weights],
    })
    left, right = st.columns(2)
    with left:
        st.markdown(_("**The output**: every pixel's context vector, as a colour"))
        charts.image(trace.output_image, key="img_output", selected=(row, col), size_px=380)
    with right:
        st.markdown(_("**The {k} pixels it weighs most** (of {total}; uniform would be {uniform} each)",
                      k=len(top_rows), total=trace.token_count, uniform=f"{pixel.uniform_weight:.4f}"))
        st.dataframe(top_rows, hide_index=True)
        if settings.image_attention.features == "rgb":
            st.markdown(_("With the colour itself as query and key, q · k is large when two colours agree: "
                          "a pixel looks at pixels of **its own colour**, wherever they are in the image. Nothing "
                          "tells it which pixels are near (no positional encoding), unlike a convolution's window."))
        else:
            st.markdown(_("With random W_q, W_k (3 × {d_k}), “similar” means whatever those projections make it mean. "
                          "Training learns W so that the useful pixels score high.", d_k=settings.image_attention.d_k))
        st.markdown(_("The output colour of a pixel is the weighted average of the colours it looks at (V = X)."))

    st.header(_("From H × W × D to N × D"))
    st.latex(image.reshape_latex(height, width))
    st.markdown(_("The pixels are read row by row: pixel (r, c) becomes token n = r · W + c. Each token's vector is "
                  "its colour scaled to [−1, 1] (x = 2 · rgb / 255 − 1), so that black · black and white · white score "
                  "high and black · white low. The weights are then N × N: "
                  "{n} × {n} = {count} numbers for this small image.",
                  n=trace.token_count, count=f"{trace.weight_count:,}"))
    g1, g2 = st.columns([1, 1])
    with g1:
        show_numbers = st.toggle(_("Write the token numbers n on the image"), key="img_numbers", value=True)
        charts.image(trace.image, key="img_grid", selected=(row, col), numbers=show_numbers, size_px=400)
    with g2:
        x = trace.x
        flat = trace.token_colours
        tokens = frames.table({
            "n": range(trace.token_count),
            "(r, c)": [f"({r}, {c})" for r, c in trace.pixel_coordinates],
            "R": flat[:, 0].tolist(), "G": flat[:, 1].tolist(), "B": flat[:, 2].tolist(),
            "x₁": x[:, 0].tolist(), "x₂": x[:, 1].tolist(), "x₃": x[:, 2].tolist(),
        })
        st.markdown(_("**X: {n} rows (tokens) × 3 columns**", n=trace.token_count))
        st.dataframe(tokens, hide_index=True, height=400,
                     column_config={c: st.column_config.NumberColumn(c, format="%+.3f") for c in ("x₁", "x₂", "x₃")})

    if st.toggle(_("Show all N × N attention weights"), key="img_all_weights"):
        st.caption(_("Row n is pixel n's attention over every pixel (the middle picture above, unrolled)."))
        charts.pattern(trace.weights, key="img_weights", row_title=_("query pixel n"), col_title=_("key pixel n"))

    widgets.check_line(trace.torch_max_abs_diff, trace.torch_matches,
                        "torch.nn.functional.scaled_dot_product_attention(Q, K, V)")


def footer() -> None:
    """The code behind the page, the same on every click (``page_body.run``)."""
    widgets.show_code((image.flatten_image, image.image_attention), key="page_code")


page_body.run(page, header=header, footer=footer)

"""The model pages' views at any length (ui/page_parts/model_view.py): the grid's pictures pooled to a small side, and the open
head's map shown as a window of its n × n weights; each checked against the full matrix."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from ui.page_parts import model_view


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def test_pool_averages_blocks_of_the_full_matrix():
    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, 150, 150))
    weights /= weights.sum(-1, keepdims=True)  # rows of attention weights
    small = model_view.pool(weights, 64)
    assert small.shape == (2, 3, 64, 64)
    for a, b in [(0, 0), (10, 37), (63, 63), (31, 0), (47, 12)]:
        rows = slice(a * 150 // 64, _ceil_div((a + 1) * 150, 64))
        cols = slice(b * 150 // 64, _ceil_div((b + 1) * 150, 64))
        assert small[1, 2, a, b] == pytest.approx(weights[1, 2, rows, cols].mean(), rel=1e-5)
    exact = rng.random((512, 512))  # 512 = 8 · 64: 8 × 8 blocks, no overlap
    np.testing.assert_allclose(model_view.pool(exact), exact.reshape(64, 8, 64, 8).mean((1, 3)), rtol=1e-5)
    short = rng.random((1, 1, 13, 13)).astype(np.float32)  # a short text's picture is its weights
    assert np.array_equal(model_view.pool(short), short)


def _png_side(url: str) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size


def test_a_512_token_texts_pictures_are_at_most_64_pixels_and_show_the_block_means():
    rng = np.random.default_rng(1)
    attentions = rng.random((2, 3, 512, 512)).astype(np.float32)
    attentions[1, 2] = 0.0
    attentions[1, 2, :, :8] = 1 / 8  # every token on the first 8 keys: the first column of pixels, nothing else
    table = model_view.head_pictures(attentions).to_pandas()
    assert list(zip(table["layer"], table["head"])) == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    assert all(_png_side(url) == (64, 64) for url in table["url"])
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(table["url"].iloc[5].split(",", 1)[1]))))
    levels = np.rint(np.sqrt(1 / 8) * 255).astype(int)  # the colour of √(1/8), as _png_data_url draws it
    assert (pixels[:, 0] == model_view._LUT[levels]).all() and (pixels[:, 1:] == model_view._LUT[0]).all()
    assert _png_side(model_view.head_pictures(attentions[:, :, :20, :20]).column("url")[0].as_py()) == (20, 20)


def test_the_map_window_is_the_whole_map_up_to_64_tokens_then_fixed_blocks_around_the_cell():
    assert model_view.map_window(13, 8, 2) == ((0, 13), (0, 13))
    assert model_view.map_window(64, 63, 0) == ((0, 64), (0, 64))
    assert model_view.map_window(512, 300, 5) == ((256, 320), (0, 64))
    assert model_view.map_window(512, 511, 448) == ((448, 512), (448, 512))
    assert model_view.map_window(70, 66, 63) == ((64, 70), (0, 64))  # the last block is shorter
    for n in (65, 200, 512):  # every cell is in its own window, which holds at most 64 × 64
        for row in range(0, n, 17):
            (r0, r1), (c0, c1) = model_view.map_window(n, row, n - 1 - row)
            assert r0 <= row < r1 and c0 <= n - 1 - row < c1 and r1 - r0 <= 64 and c1 - c0 <= 64


def test_the_map_data_of_a_window_holds_its_cells_of_the_full_matrix_by_their_global_place():
    rng = np.random.default_rng(2)
    n = 512
    weights = rng.random((n, n))
    labels = [f"{i + 1} t{i}" for i in range(n)]
    rows, cols = model_view.map_window(n, 300, 5)
    data = model_view.map_data(weights, labels, rows, cols, selected=(300, 5)).to_pandas()
    assert len(data) == 64 * 64
    assert (data["i"].min(), data["i"].max(), data["j"].min(), data["j"].max()) == (256, 319, 0, 63)
    np.testing.assert_array_equal(data["weight"].to_numpy(), weights[data["i"], data["j"]])  # each cell's own weight
    assert list(data["query"][:2]) == ["257 t256", "257 t256"] and list(data["key"][:2]) == ["1 t0", "2 t1"]
    (chosen,) = data.index[data["selected"]]
    assert (data["i"][chosen], data["j"][chosen]) == (300, 5)
    assert not model_view.map_data(weights, labels, rows, cols, selected=None).to_pandas()["selected"].any()
    whole = model_view.map_data(weights[:13, :13], labels[:13], (0, 13), (0, 13), selected=None).to_pandas()
    np.testing.assert_array_equal(whole["weight"].to_numpy().reshape(13, 13), weights[:13, :13])


def test_the_pictures_take_the_palettes_colours_of_weights():
    """White to blue (classic) or viridis (colour-blind safe), as every heatmap's numbers >= 0: a weight of 0 is the
    scale's first colour, 1 its last."""
    attentions = np.zeros((1, 1, 4, 4), dtype=np.float32)
    attentions[0, 0, :, 0] = 1.0
    for palette, zero, one in (("classic", (247, 251, 255), (8, 48, 107)), ("cvd", (68, 1, 84), (253, 231, 37))):
        url = model_view.head_pictures(attentions, palette=palette).column("url")[0].as_py()
        pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
        assert tuple(pixels[0, 0]) == one and tuple(pixels[0, 1]) == zero, palette


def test_the_trained_models_grid_follows_the_colour_blind_palette():
    from conftest import APP, charts
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["palette"] = "cvd"
    at.run()
    at.switch_page("app_pages/trained_model.py").run()
    assert not at.exception, at.exception
    (grid,) = [data for spec, data in charts(at) if "head_pick" in str(spec)]
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(grid["url"].iloc[0].split(",", 1)[1]))))
    viridis = {tuple(c) for c in model_view._LUTS["cvd"]}
    assert {tuple(p) for p in pixels.reshape(-1, 3)} <= viridis

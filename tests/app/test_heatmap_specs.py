"""A heatmap's Vega-Lite spec of each kind is the one Altair builds for it, although only one kind is built with
Altair per scale (ui.heatmaps._heatmap_template): the others are that spec with another colour scheme, or without
the click's selection parameter."""

from __future__ import annotations

import pytest

from ui import heatmaps, presenter

#: The colour schemes palette_scheme hands out: (scheme, reversed) of both palettes, signed and >= 0.
SCHEMES = [("redblue", True), ("blues", False), ("blueorange", False), ("viridis", False)]


@pytest.mark.parametrize("scale", [1.0, presenter.SCALE])
@pytest.mark.parametrize("clickable", [True, False])
@pytest.mark.parametrize(("scheme", "reverse"), SCHEMES)
def test_every_heatmap_kind_is_the_spec_altair_builds_for_it(clickable, scheme, reverse, scale):
    made = heatmaps._heatmap_template(clickable, scheme, reverse, scale)
    built = heatmaps._altair_heatmap(clickable, scheme, reverse, scale)
    assert made["layer"][0]["encoding"]["color"]["scale"] == {"scheme": scheme, "reverse": reverse}
    if clickable:
        # Altair names the clickable layer after a hash of the whole chart (Streamlit renames it "view_1" on the way
        # to the browser): the selection must name the layer it is on
        assert made["params"][0]["views"] == [made["layer"][0]["name"]]
        for spec in (made, built):
            spec["params"][0]["views"], spec["layer"][0]["name"] = ["view"], "view"
    else:
        assert "params" not in made and "name" not in made["layer"][0]
    assert made == built


def test_a_template_handed_out_is_a_copy_of_its_own():
    first = heatmaps._heatmap_template(False, "blues", False, 1.0)
    first["layer"][0]["encoding"]["color"]["scale"]["scheme"] = "changed"
    del first["layer"][1]
    again = heatmaps._heatmap_template(False, "blues", False, 1.0)
    assert again["layer"][0]["encoding"]["color"]["scale"]["scheme"] == "blues" and len(again["layer"]) == 3

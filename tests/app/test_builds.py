"""A click rebuilds only what read the changed setting (issue 39's guard): counted builds, not time.

Every page under AppTest: switching the palette, the chart tables, presenter mode or the language runs no build
(no builder reads them); a build reads only the settings it needs (recorded by ``attention_core.reads``), so a
setting of another page rebuilds nothing here, and a setting the build read rebuilds it.
"""

from __future__ import annotations

import collections

import pytest
import torch
from conftest import APP, page_paths
from streamlit.testing.v1 import AppTest

from attention_core import reads, registry
from attention_core.lessons.alibi.page import build_alibi_walkthrough
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings
from ui import builds

VIEW = [("setting_palette", "cvd"), ("setting_tables", True), ("setting_presenter", True)]


def builds_during(action) -> collections.Counter:
    before = collections.Counter(builds.BUILDS_RUN)
    action()
    return builds.BUILDS_RUN - before


@pytest.mark.parametrize("path", page_paths())
def test_a_click_that_changes_no_input_of_the_page_rebuilds_nothing(path):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(path).run()
    at.run()  # a second run of the same page: everything it built is shared now
    assert not at.exception, at.exception

    def view_clicks():
        for key, value in VIEW[:2]:  # presenter mode hides the sidebar's other widgets: last, with the language
            widget = at.radio(key=key) if key == "setting_palette" else at.toggle(key=key)
            widget.set_value(value).run()
            assert not at.exception, (path, key, at.exception)
        at.radio(key="setting_language").set_value("zh").run()
        at.toggle(key="setting_presenter").set_value(True).run()
        assert not at.exception, at.exception

    rebuilt = builds_during(view_clicks)
    assert not rebuilt, f"{path}: the palette, the tables, the language or presenter mode rebuilt {dict(rebuilt)}"


def test_a_setting_the_build_read_rebuilds_it_and_another_pages_does_not(monkeypatch):
    # An empty shared cache: a build that an earlier test of this process made (ALiBi with 3 heads, self-attention
    # with d_k = 2) would otherwise be handed back, not rebuilt, and this test would depend on which tests ran before.
    monkeypatch.setattr(builds, "_BUILDS", collections.OrderedDict())
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/alibi.py").run()
    heads = next(n for n in at.number_input if n.key == "setting_alibi.num_heads")
    assert builds_during(lambda: heads.set_value(3).run())["build_alibi_walkthrough"] == 1
    at.switch_page("app_pages/self_attention.py").run()
    at.run()
    # ALiBi's own setting is not read by the self-attention page's build: nothing to rebuild
    assert not builds_during(lambda: at.run())
    rebuilt = builds_during(lambda: at.number_input(key="setting_d_k").set_value(2).run())
    assert rebuilt["build_walkthrough"] == 1 and not at.exception


def test_what_a_build_reads_is_recorded_and_keys_the_shared_result():
    with reads.recording() as read:
        build_walkthrough(Settings(), {})
    assert read == {"preset", "sentence", "d_model", "d_k", "seed"}
    with reads.recording() as read:
        build_alibi_walkthrough(Settings(), Settings().alibi, {})
    assert "alibi.num_heads" in read and "palette" not in read and "self_attention.stage" not in read

    first = builds.built(build_walkthrough, (Settings(), {}), {})
    same = builds.built(build_walkthrough, (Settings().set(palette="cvd", language="zh"), {}), {})
    assert torch.equal(same.trace.attention.weights, first.trace.attention.weights)
    assert same.settings.palette == "cvd"  # handed back as of the current settings: the same numbers
    other = builds.built(build_walkthrough, (Settings().set(d_k=2), {}), {})
    assert other.trace.attention.weights is not first.trace.attention.weights and other.settings.d_k == 2
    edited = builds.built(build_walkthrough, (Settings(), {"x": {(0, 0): 1.5}}), {})
    assert float(edited.trace.x[0, 0]) == 1.5  # the edits are part of the key, whole


def test_reading_a_settings_object_whole_counts_as_reading_everything():
    settings = Settings()
    for whole in (hash, lambda s: s == Settings(), lambda s: s.__dict__, lambda s: __import__("copy").copy(s),
                  lambda s: __import__("pickle").dumps(s)):
        with reads.recording() as read:
            whole(settings)
        assert read == {reads.EVERYTHING} or set(Settings.paths()) <= read | {reads.EVERYTHING}, whole


def test_the_read_hook_is_on_the_settings_classes_only_while_a_recording_is_under_way():
    """Outside any recording a settings read is a plain attribute read (no Python hook on every read of every run);
    nested recordings and one in another thread keep the hook on until the last one ends, and a read in another thread
    meanwhile is not recorded by this one."""
    import threading

    group = type(Settings().alibi)
    assert "__getattribute__" not in vars(Settings) and "__getattribute__" not in vars(group)
    others: list[set] = []
    started, release = threading.Event(), threading.Event()

    def other_thread() -> None:
        with reads.recording() as read:
            started.set()
            release.wait(timeout=30)
            _ = Settings().d_model
        others.append(read)

    thread = threading.Thread(target=other_thread)
    thread.start()
    assert started.wait(timeout=30)
    with reads.recording() as read:
        with reads.recording() as inner:
            _ = Settings().alibi.num_heads
        assert "__getattribute__" in vars(Settings)  # the outer recording is still under way
        _ = Settings().seed
    assert "__getattribute__" in vars(Settings)  # the other thread's recording is still under way
    release.set()
    thread.join(timeout=30)
    assert "__getattribute__" not in vars(Settings) and "__getattribute__" not in vars(group)
    assert "alibi.num_heads" in inner and "seed" not in inner  # a nested recording keeps its own reads
    assert read == {"seed"}
    assert others == [{"d_model"}]


def test_a_pages_own_group_beside_the_settings_is_keyed_by_what_the_build_read_of_it(monkeypatch):
    """``build(settings, settings.alibi, edits)`` (``Page.build_args``): the group's reads key the result, as
    ``"alibi.num_heads"``; its stage, which the builder does not read, rebuilds nothing; a group that is not the
    settings' own is not shared (built each time)."""
    monkeypatch.setattr(builds, "_BUILDS", collections.OrderedDict())
    from attention_core.lessons.alibi.page import ALIBI_PAGE

    settings = Settings().set(**{"alibi.num_heads": 2})
    assert ALIBI_PAGE.build_args(settings, {}) == (settings, settings.alibi, {})
    first = builds.built(build_alibi_walkthrough, ALIBI_PAGE.build_args(settings, {}), {})
    staged = settings.set(**{"alibi.stage": "weights"})
    before = collections.Counter(builds.BUILDS_RUN)
    same = builds.built(build_alibi_walkthrough, ALIBI_PAGE.build_args(staged, {}), {})
    assert not builds.BUILDS_RUN - before  # the stage is no input of the walk-through
    assert same.trace is first.trace and same.settings.alibi.stage == "weights"
    more = settings.set(**{"alibi.num_heads": 3})
    rebuilt = builds.built(build_alibi_walkthrough, ALIBI_PAGE.build_args(more, {}), {})
    assert (builds.BUILDS_RUN - before)["build_alibi_walkthrough"] == 1 and rebuilt.trace.bias.shape[0] == 3
    stranger = builds.built(build_alibi_walkthrough, (settings, more.alibi, {}), {})  # not the settings' own group
    assert (builds.BUILDS_RUN - before)["build_alibi_walkthrough"] == 2 and stranger.trace.bias.shape[0] == 3


@pytest.mark.parametrize("page", [page for page in registry.PAGES if page.build is not None], ids=lambda page: page.key)
def test_a_builder_reads_no_other_pages_group_and_not_its_stage(page):
    """Each builder reads the shared fields and its one group (its own, or the one it shares: ``Page.group_key``),
    never another page's, never the stage (a view of the walk-through, not an input), never the settings whole."""
    with reads.recording() as read:
        page.walkthrough(Settings())
    assert reads.EVERYTHING not in read
    groups = {path.split(".")[0] for path in read if "." in path}
    assert groups <= ({page.group_key} if page.group_key else set()), (page.key, sorted(read))
    assert f"{page.group_key}.stage" not in read and f"{page.key}.stage" not in read

"""What a page of the app is: one declaration, kept in the page's own folder.

Each page is declared once, as a :class:`Page`, in its folder's ``page.py`` (the ALiBi page in
``attention_core/lessons/alibi/page.py``, the tokens page in ``attention_core/lessons/tokens/page.py``, ...);
:mod:`attention_core.registry` lists every declaration once, in the order of the app's navigation, and
everything that lists pages loops over that registry: the router (``app.py``), the overview's "where to go next",
the load benchmark and the tests.

A page's key is its one name: the page file ``app_pages/<key>.py``, the URL path ``/<key with - for _>``.

A leaf module (imports only ``errors``): the lessons import it to declare their pages.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from attention_core.errors import N_

#: The navigation's sections, in order: key -> title (marked for translation; the router translates it).
SECTIONS: dict[str, str] = {
    "start": N_("Start"),
    "self_attention": N_("Self-attention"),
    "masking": N_("Masking & heads"),
    "experiments": N_("Experiments"),
    "transformer": N_("The Transformer"),
    "modern": N_("Modern attention"),
    "trained": N_("A trained model"),
    "learning": N_("How attention learns"),
}


@dataclass(frozen=True, eq=False)
class Page:
    """One page of the app (equal only to itself: each is declared once).

    Attributes:
        key: the page's one name, a Python identifier: its file ``app_pages/<key>.py`` and its URL path.
        title: its name in the navigation and on its worksheets (marked with ``N_``; translated by the UI).
        icon: its icon in the navigation and on the overview (a Material Symbols name, ``":material/abc:"``).
        section: the navigation section it is listed under (a key of :data:`SECTIONS`).
        summary: one line on the overview's "Where to go next" (marked with ``N_``), or "" for the overview itself.
        stages: a step page's stages, in order: key -> title (marked with ``N_``); empty for other pages. A step
            page's current stage is a setting of its own, ``settings.<key>.stage``, added to its group by
            :mod:`attention_core.settings` (the page does not declare it).
        default_stage: the stage a step page opens on ("" for its first).
        default_stage_why: why it opens there, when that is not its first stage (marked with ``N_``): shown under
            the stepper on that stage, so a learner who lands on step 5 of 8 knows why and how to go back.
        opening_entry: ``opening_entry(walk)`` -> the explained entry's settings (``{"entry_row": 1, ...}``) for a
            session that has not chosen an entry yet (no link, no pick, no click), where the default entry would
            explain zeros (the backward pages: the target's row), or None.
        build: a step page's builder -> its walk-through (every number the page shows), or None (the model pages
            build per model and prompt): what the page's body runs, and what the tests step through for every page
            of the registry. A page with settings of its own (``settings`` below) has ``build(shared, group, edits)``:
            the shared settings (read for the shared fields only), its own group ``settings.<key>`` (its own
            settings are read there, never as ``shared.<key>``; never its ``stage``, a view of the walk-through, not
            an input) and the edits; a page that shares another page's settings (``settings_of``) is given that
            page's group the same way; any other page has ``build(shared, edits)``; a page without edits leaves them
            out. No builder reads a page's group from ``shared``. :meth:`walkthrough` calls it from one settings
            object (and :meth:`build_args` gives its arguments, for a caller that runs it itself, such as the shared
            build cache).
        step_through: a step page's ``step_through(walk, stage)`` -> the ``StepThrough`` of that stage of its walk-through
            (:mod:`attention_core.stepthrough`); what the one renderer draws, and the worksheets and exports read.
        settings: the page's own settings, a frozen dataclass with their defaults (``settings.<key>`` in the one
            settings object; a step page's ``stage`` is added to it), or None.
        fields: what each of those settings accepts (:mod:`attention_core.fields`, one row each; a step page's
            ``stage`` row is added from ``stages``).
        legacy: link parameter names from before the page had its own settings -> its field names: a link made
            then still opens the same numbers.
        recipe: a step page's export recipe, ``recipe(walk)`` -> :class:`attention_core.recipe.Recipe` (how the
            self-checking script recomputes every panel), declared beside its walk-through.
        settings_of: the key of another page whose settings this page shares and its builder takes (the multi-head
            backward page: the backward page's target, η and steps, bound on both pages), or "" (a page declares
            either this or ``settings``).
    """

    key: str
    title: str
    icon: str
    section: str
    summary: str = ""
    stages: Mapping[str, str] = field(default_factory=dict)
    default_stage: str = ""
    default_stage_why: str = ""
    opening_entry: Optional[Callable[[Any], Mapping[str, int]]] = None
    build: Optional[Callable[..., Any]] = None
    step_through: Optional[Callable[[Any, str], Any]] = None
    settings: Optional[type] = None
    fields: tuple[Any, ...] = ()
    legacy: Mapping[str, str] = field(default_factory=dict)
    recipe: Optional[Callable[[Any], Any]] = None
    settings_of: str = ""

    def __post_init__(self) -> None:
        if self.settings_of and self.settings is not None:
            raise ValueError(f"the {self.key} page declares both settings and settings_of")

    @property
    def has_own_settings(self) -> bool:
        """Whether the page declares settings of its own (a group with fields besides the ``stage`` a step page is
        given): its builder then takes that group as its second argument."""
        return self.settings is not None and bool(dataclasses.fields(self.settings))

    @property
    def group_key(self) -> str:
        """The key of the settings group the page's builder takes: its own key (a page with settings of its own),
        the page's it shares (``settings_of``), or "" (none: ``build(shared, edits)``)."""
        return self.settings_of or (self.key if self.has_own_settings else "")

    def build_args(self, settings: Any, edits: Any = None) -> tuple:
        """The arguments of the page's builder from one settings object: ``(settings, settings.<group_key>, edits)``
        for a page with a group (:attr:`group_key`: its own, or the one it shares), ``(settings, edits)`` otherwise;
        ``edits`` is left out when None.

        Args:
            settings: the composed :class:`attention_core.settings.Settings` (validated).
            edits: the user's edits (cell overrides by matrix name), or None for none (and for a page without edits).
        """
        args = (settings, getattr(settings, self.group_key)) if self.group_key else (settings,)
        return args if edits is None else args + (edits,)

    def walkthrough(self, settings: Any, edits: Any = None) -> Any:
        """The page's walk-through of ``settings`` and ``edits``: its builder called with :meth:`build_args`, the one
        place a builder is called from a settings object.

        Args:
            settings: the composed :class:`attention_core.settings.Settings` (validated).
            edits: the user's edits, or None (none; a page without edits takes none).

        Raises:
            TypeError: the page has no builder (``build`` is None: the model pages).
            InputError: what its builder raises on bad input (a bad sentence, a bad edited cell, ...).
        """
        if self.build is None:
            raise TypeError(f"the {self.key} page has no builder")
        return self.build(*self.build_args(settings, edits))

    @property
    def url_path(self) -> str:
        """The page's URL path, without the leading slash: the key with "-" for "_" ("no_weights" -> "no-weights")."""
        return self.key.replace("_", "-")

    @property
    def first_stage(self) -> str:
        """The stage a step page opens on: ``default_stage``, or its first stage ("" for a page without stages)."""
        return self.default_stage or next(iter(self.stages), "")

    @property
    def stage_field(self) -> str:
        """The settings path of a step page's current stage (``"<key>.stage"``), or "" for a page without stages."""
        return f"{self.key}.stage" if self.stages else ""

    @property
    def file(self) -> str:
        """The page's file name in ``app_pages/``."""
        return f"{self.key}.py"

"""Persona charters: the five that ship, lookup order, refusals and malformed files."""

from __future__ import annotations

from pathlib import Path

import pytest

from council.errors import ConfigurationError, MalformedCharter, PersonaNotFound
from council.roster.personas import Charter, list_personas, load_persona, parse_charter

SHIPPED = ("api-design", "general", "performance", "security", "tests")

CHARTER = "---\nname: Style\ndescription: Reads for style.\n---\nLook at the names.\n"


@pytest.mark.parametrize("persona", SHIPPED)
def test_shipped_persona_loads_with_a_substantive_body(persona: str) -> None:
    """Each built-in charter parses, keeps its id, and has a 15-40 line body on severity."""
    charter = load_persona(persona)
    assert charter.id == persona and charter.name and charter.description
    assert 15 <= len(charter.body.splitlines()) <= 40
    assert all(word in charter.body for word in ("critical", "medium", "minor"))


def test_list_personas_holds_exactly_the_shipped_ones() -> None:
    """Without extra dirs the listing is the five built-in charters, by id."""
    assert tuple(c.id for c in list_personas()) == SHIPPED


def test_parse_charter_reads_frontmatter_and_body() -> None:
    """Name, description and body come apart; CRLF, a BOM and quotes are tolerated."""
    text = '\ufeff---\r\nname: "Style"\r\ndescription: Reads for style.\r\n---\r\n\r\nBody.\r\n'
    assert parse_charter(text, "dir/style.md") == Charter(
        id="style", name="Style", description="Reads for style.", body="Body."
    )


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("name: x\n---\nbody\n", "does not open with a '---' line"),
        ("---\nname: x\ndescription: y\nbody\n", "no closing '---' line"),
        ("---\ndescription: y\n---\nbody\n", "no 'name'"),
        ("---\nname: x\n---\nbody\n", "no 'description'"),
        ("---\nname: x\ndescription: y\n---\n\n  \n", "no body"),
        ("---\nname: x\ndescription:\n---\nbody\n", "'description' is blank"),
        ("---\nname: x\nname: z\ndescription: y\n---\nbody\n", "'name' is repeated"),
        ("---\nname: x\ndescription: y\nmodel: m\n---\nbody\n", "unknown frontmatter key 'model'"),
        ("---\nname x\ndescription: y\n---\nbody\n", "line 2 is not 'key: value'"),
    ],
)
def test_malformed_charter_is_refused_naming_what_is_wrong(text: str, missing: str) -> None:
    """A malformed charter raises a ValueError that names the file and what is missing."""
    with pytest.raises(MalformedCharter) as caught:
        parse_charter(text, "personas/x.md")
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, ConfigurationError)
    assert missing in caught.value.problem and "personas/x.md" in str(caught.value)


def test_unknown_persona_is_refused_naming_every_place_looked(tmp_path: Path) -> None:
    """A persona no file provides names the id, each dir, the built-ins and known ids."""
    gone = tmp_path / "gone"
    with pytest.raises(PersonaNotFound) as caught:
        load_persona("style", [tmp_path, gone])
    err = caught.value
    assert err.exit_code == 2 and err.persona == "style"
    assert err.places[0] == str(tmp_path) and err.places[1] == f"{gone} (no such directory)"
    assert "built into council" in err.places[2]
    assert err.known == SHIPPED
    assert "'style'" in str(err) and str(tmp_path) in str(err)


@pytest.mark.parametrize("persona", ["../general", "general.md", "a/b", ""])
def test_persona_id_that_no_file_can_carry_is_not_found(persona: str, tmp_path: Path) -> None:
    """An id with a dot or slash is never looked up as a path, and is refused."""
    (tmp_path / "general.md").write_text(CHARTER, encoding="utf-8")
    with pytest.raises(PersonaNotFound) as caught:
        load_persona(persona, [tmp_path])
    assert caught.value.places == () and "is not a persona id" in str(caught.value)


def test_extra_dir_overrides_the_built_in_and_adds_personas(tmp_path: Path) -> None:
    """A charter in an extra dir wins over the package's and new ids are listed."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "security.md").write_text(CHARTER.replace("Style", "Ours"), encoding="utf-8")
    (second / "security.md").write_text(CHARTER, encoding="utf-8")
    (second / "style.md").write_text(CHARTER, encoding="utf-8")
    (second / "notes.txt").write_text("not a charter", encoding="utf-8")
    assert load_persona("security", [first, second]).name == "Ours"
    assert load_persona("style", [first, second]).body == "Look at the names."
    listed = {c.id: c.name for c in list_personas([first, second])}
    built_in = {p: load_persona(p).name for p in SHIPPED}
    assert listed == built_in | {"security": "Ours", "style": "Style"}


def test_malformed_charter_in_an_extra_dir_refuses_the_lookup(tmp_path: Path) -> None:
    """A broken override is an error, never a silent fall back to the built-in."""
    (tmp_path / "security.md").write_text("no frontmatter\n", encoding="utf-8")
    with pytest.raises(MalformedCharter, match=r"security\.md"):
        load_persona("security", [tmp_path])
    with pytest.raises(MalformedCharter):
        list_personas([tmp_path])


def test_charter_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """A charter file in another encoding is refused as not UTF-8."""
    (tmp_path / "style.md").write_bytes(CHARTER.replace("names", "n\xe4mes").encode("latin-1"))
    with pytest.raises(MalformedCharter, match="not UTF-8"):
        load_persona("style", [tmp_path])

"""An event read as far as it goes: cut anywhere, it gives the fields read whole before
the cut, or says it holds no JSON object; nested too deep, the deep part is null."""

import json

import pytest

from reflect.integrations.event_json import MAX_DEPTH, loads

EVENT = {"session_id": "s-1", "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
         "tool_input": {"command": "pytest -x", "timeout": 120, "flags": [True, None, 1.5]},
         "error": "Traceback:\n  \"q\" \\ \u00e9 \u2603\nKeyError: 'k'\n"}


def test_a_whole_event_is_read_as_json_reads_it():
    text = json.dumps(EVENT)
    assert loads(text, cut=False) == (EVENT, "")


def test_cut_anywhere_it_keeps_what_came_whole_before_the_cut():
    text = json.dumps(EVENT)
    for n in range(len(text)):
        try:
            raw, said = loads(text[:n], cut=True)
        except ValueError:
            assert n < len('{"session_id": "s-1"')  # nothing whole yet
            continue
        assert isinstance(raw, dict) and said == "its end was not read", n
        for key, value in raw.items():  # what was read whole is the event's own
            if key in EVENT and isinstance(value, (int, bool)) and value is not None:
                assert value == EVENT[key]
        if n > text.index('"tool_name"'):
            assert raw["hook_event_name"] == "PostToolUseFailure"
        if n > text.index('"tool_input"') + 40:
            assert raw["tool_input"]["command"] == "pytest -x"


@pytest.mark.parametrize(("depth", "dropped"),
                         [(MAX_DEPTH + 100, False), (5_000, True), (100_000, True)])
def test_past_what_json_reads_values_deeper_than_the_limit_are_null(depth, dropped):
    text = json.dumps(EVENT)[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}"
    raw, said = loads(text, cut=False)
    assert {k: raw[k] for k in EVENT} == EVENT
    if dropped:
        assert said == f"values nested deeper than {MAX_DEPTH} left out"
    else:  # as deep as json reads: read whole
        assert said == "" and json.dumps(raw["extra"]) == "[" * depth + "]" * depth


def test_what_holds_no_object_says_so():
    with pytest.raises(ValueError, match="no JSON object"):
        loads("\0" * 1000, cut=True)

"""DataFrames, rich values and argument coercion, without a kernel.

Everything goes through ``NotebookMCP`` and the sans-IO server, as a client would see it;
replies are validated against the official schema.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import itertools
import json
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.kernel import rich
from mcp_notebook.kernel.live import VariableWatcher
from mcp_notebook.protocol import Server, Session
from mcp_notebook.registry import dataframes
from tests.schema import validate, validate_reply

_ids = itertools.count(1)


async def reply(mcp: NotebookMCP, method: str, params: dict[str, Any] | None = None) -> dict:
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
    answer = await Server(mcp.registry).handle(message, Session())
    return validate_reply(method, answer)


async def rpc(mcp: NotebookMCP, method: str, params: dict[str, Any] | None = None) -> dict:
    answer = await reply(mcp, method, params)
    assert "error" not in answer, answer
    return answer["result"]


async def read(mcp: NotebookMCP, uri: str) -> dict:
    (contents,) = (await rpc(mcp, "resources/read", {"uri": uri}))["contents"]
    assert contents["uri"] == uri
    return contents


async def read_error(mcp: NotebookMCP, uri: str) -> dict:
    answer = await reply(mcp, "resources/read", {"uri": uri})
    assert "error" in answer, answer
    return answer["error"]


async def call(mcp: NotebookMCP, tool: str, /, **arguments: Any) -> dict:
    return await rpc(mcp, "tools/call", {"name": tool, "arguments": arguments})


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN / Infinity tokens, as strict JSON parsers do."""

    def refuse(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def numbers(rows: int) -> pd.DataFrame:
    return pd.DataFrame({"n": np.arange(rows), "half": np.arange(rows) / 2})


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


# -- the resource and its pages ------------------------------------------------------------


async def test_a_small_frame_is_read_whole_with_an_exact_size():
    mcp = NotebookMCP()
    frame = pd.DataFrame({"city": ["Oslo", "Lima"], "sales": [3, 5]})
    mcp.resource(frame, name="sales")

    (listed,) = (await rpc(mcp, "resources/list"))["resources"]
    contents = await read(mcp, "df://sales")
    assert contents["mimeType"] == "text/csv"
    assert contents["text"] == "city,sales\nOslo,3\nLima,5\n"
    assert listed["size"] == len(contents["text"].encode())
    assert listed["description"] == "A DataFrame as csv (2 rows, 2 columns)"
    assert contents["_meta"]["mcp-notebook/page"] == {
        "offset": 0,
        "limit": dataframes.PAGE_ROWS,
        "rows": 2,
        "totalRows": 2,
    }


async def test_a_large_frame_reads_as_a_bounded_first_page_that_says_so():
    mcp = NotebookMCP()
    frame = numbers(2500)
    mcp.resource(frame, name="big")

    (listed,) = (await rpc(mcp, "resources/list"))["resources"]
    assert "at most the first 1000 rows" in listed["description"]
    assert "df://big{?offset,limit,columns,format}" in listed["description"]
    contents = await read(mcp, "df://big")
    page = pd.read_csv(io.StringIO(contents["text"]))
    pd.testing.assert_frame_equal(page, frame.iloc[:1000])
    assert contents["_meta"]["mcp-notebook/page"] == {
        "offset": 0,
        "limit": 1000,
        "rows": 1000,
        "totalRows": 2500,
        "next": "df://big?offset=1000&limit=1000&format=csv",
    }
    # The advertised size is an estimate from sampled rows: close to what a read returns.
    assert abs(listed["size"] - len(contents["text"].encode())) / listed["size"] < 0.05


async def test_following_next_pages_gives_the_whole_frame_once():
    mcp = NotebookMCP()
    frame = numbers(2345)
    mcp.resource(frame, name="big")
    uri, parts = "df://big?limit=1000", []
    while uri:
        contents = await read(mcp, uri)
        parts.append(pd.read_csv(io.StringIO(contents["text"])))
        uri = contents["_meta"]["mcp-notebook/page"].get("next")
    assert [len(p) for p in parts] == [1000, 1000, 345]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), frame)


async def test_pages_pick_rows_columns_and_format():
    mcp = NotebookMCP()
    frame = pd.DataFrame(
        {"region": ["n", "s", "e", "w", "x"], "units": [1, 2, 3, 4, 5], "price": [1.5] * 5}
    )
    mcp.resource(frame, name="sales")

    as_json = await read(mcp, "df://sales?offset=1&limit=2&columns=units,region&format=json")
    assert as_json["mimeType"] == "application/json"
    assert strict_json(as_json["text"]) == [
        {"units": 2, "region": "s"},
        {"units": 3, "region": "e"},
    ]
    assert as_json["_meta"]["mcp-notebook/page"]["next"] == (
        "df://sales?offset=3&limit=2&columns=units,region&format=json"
    )
    as_md = await read(mcp, "df://sales?offset=3&limit=1&format=markdown")
    assert as_md["mimeType"] == "text/markdown"
    assert as_md["text"].splitlines()[:3] == [
        "| region | units | price |",
        "|---|---|---|",
        "| w | 4 | 1.5 |",
    ]
    assert (
        "_Rows 4-4 of 5; next page: df://sales?offset=4&limit=1&format=markdown_" in (as_md["text"])
    )
    odd = pd.DataFrame({"a&b": [1, 2], "c d": [3, 4]})
    mcp.resource(odd, name="odd")
    first = await read(mcp, "df://odd?limit=1&columns=c%20d,a%26b")
    assert first["text"] == "c d,a&b\n3,1\n"
    following = first["_meta"]["mcp-notebook/page"]["next"]
    assert following == "df://odd?offset=1&limit=1&columns=c%20d,a%26b&format=csv"
    assert (await read(mcp, following))["text"] == "c d,a&b\n4,2\n"
    past_the_end = await read(mcp, "df://sales?offset=99&format=csv")
    assert past_the_end["text"] == "region,units,price\n"
    assert "next" not in past_the_end["_meta"]["mcp-notebook/page"]


@pytest.mark.parametrize(
    "query, message",
    [
        ("limit=0", "limit must be between 1 and 10000"),
        ("limit=10001", "limit must be between 1 and 10000"),
        ("offset=-1", "offset must be 0 or more"),
        ("offset=first", "offset"),
        ("columns=units,nope", "no column nope; the columns are region, units"),
        ("format=xml", "format must be one of csv, json, markdown"),
    ],
)
async def test_bad_page_queries_are_invalid_params(query, message):
    mcp = NotebookMCP()
    mcp.resource(pd.DataFrame({"region": ["n"], "units": [1]}), name="sales")
    error = await read_error(mcp, f"df://sales?{query}")
    assert error["code"] == -32602
    assert message in error["message"]


async def test_templates_are_listed_and_complete_columns_and_formats():
    mcp = NotebookMCP()
    mcp.resource(pd.DataFrame({"region": ["n"], "revenue": [1], "units": [2]}), name="sales")
    templates = (await rpc(mcp, "resources/templates/list"))["resourceTemplates"]
    assert [(t["uriTemplate"], t["name"], t["mimeType"]) for t in templates] == [
        ("df://sales{?offset,limit,columns,format}", "sales", "text/csv"),
        ("df://sales/schema", "sales", "application/json"),
    ]

    async def complete(argument: str, value: str) -> list[str]:
        ref = {"type": "ref/resource", "uri": "df://sales{?offset,limit,columns,format}"}
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        message = {"jsonrpc": "2.0", "id": 1, "method": "completion/complete", "params": params}
        answer = await Server(mcp.registry).handle(message, Session())
        return validate(answer["result"], "CompleteResult")["completion"]["values"]

    assert await complete("columns", "re") == ["region", "revenue"]
    assert await complete("columns", "region,u") == ["region,units"]
    assert await complete("format", "") == ["csv", "json", "markdown"]


async def test_schema_lists_columns_dtypes_nulls_rows_and_samples():
    mcp = NotebookMCP()
    frame = pd.DataFrame(
        {
            "region": pd.Categorical(["n", "s", None, "n", "s", "e", "w"]),
            "units": pd.array([1, None, 3, 4, 5, 6, 7], dtype="Int64"),
            "when": pd.date_range("2024-01-01", periods=7),
        }
    )
    mcp.resource(frame, name="sales")
    contents = await read(mcp, "df://sales/schema")
    assert contents["mimeType"] == "application/json"
    schema = strict_json(contents["text"])
    assert schema["rows"] == 7
    assert schema["columns"] == [
        {"name": "region", "dtype": "category", "nulls": 1},
        {"name": "units", "dtype": "Int64", "nulls": 1},
        {"name": "when", "dtype": str(frame["when"].dtype), "nulls": 0},
    ]
    assert schema["sample"][:2] == [
        {"region": "n", "units": 1, "when": "2024-01-01T00:00:00"},
        {"region": "s", "units": None, "when": "2024-01-02T00:00:00"},
    ]
    assert len(schema["sample"]) == dataframes.SAMPLE_ROWS
    assert schema["pages"]["uriTemplate"] == "df://sales{?offset,limit,columns,format}"


async def test_a_page_of_a_million_rows_copies_neither_the_frame_nor_its_text():
    mcp = NotebookMCP()
    frame = pd.DataFrame(np.random.default_rng(0).random((1_000_000, 10)))
    frame.columns = [f"c{i}" for i in range(10)]
    mcp.resource(frame, name="huge")  # 80 MB of float64
    tracemalloc.start()
    try:
        first = await read(mcp, "df://huge?limit=100")
        middle = await read(mcp, "df://huge?offset=500000&limit=100&format=json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, f"peak {peak / 1e6:.1f} MB: the frame or its CSV was copied"
    assert len(pd.read_csv(io.StringIO(first["text"]))) == 100
    assert strict_json(middle["text"])[0]["c0"] == frame.iloc[500_000, 0]


async def test_json_pages_have_no_nan_and_iso_dates():
    mcp = NotebookMCP()
    frame = pd.DataFrame(
        {
            "f": [1.5, np.nan, np.inf],
            "when": pd.to_datetime(["2024-05-01 12:30", None, "2024-05-03 00:00"]).tz_localize(
                "UTC"
            ),
            "span": [pd.Timedelta("1h"), pd.NaT, pd.Timedelta(0)],
            "cat": pd.Categorical(["a", None, "b"]),
            "i": pd.array([1, None, 3], dtype="Int64"),
            "b": pd.array([True, None, False], dtype="boolean"),
            "obj": [decimal.Decimal("1.10"), [1, 2], {"k": np.int64(4)}],
            "np": np.array([1, 2, 3], dtype=np.uint8),
        }
    )
    mcp.resource(frame, name="odd", format="json")
    rows = strict_json((await read(mcp, "df://odd"))["text"])
    assert rows[1] == {
        "f": None,
        "when": None,
        "span": None,
        "cat": None,
        "i": None,
        "b": None,
        "obj": [1, 2],
        "np": 2,
    }
    assert rows[0]["when"] == "2024-05-01T12:30:00+00:00"
    assert rows[0]["span"] == "P0DT1H0M0S"
    assert rows[2]["f"] is None  # infinity has no JSON form either
    assert rows[0]["obj"] == "1.10" and rows[2]["obj"] == {"k": 4}


async def test_a_meaningful_index_is_served_as_columns():
    mcp = NotebookMCP()
    by_day = pd.DataFrame(
        {"units": [3, 4]}, index=pd.DatetimeIndex(["2024-01-01", "2024-01-02"], name="day")
    )
    mcp.resource(by_day, name="daily")
    numbered = pd.DataFrame({"units": [3, 4]}, index=[10, 20])  # row numbers: left out
    mcp.resource(numbered, name="numbered")
    assert (await read(mcp, "df://daily")).get("text").splitlines() == [
        "day,units",
        "2024-01-01,3",
        "2024-01-02,4",
    ]
    assert (await read(mcp, "df://numbered"))["text"] == "units\n3\n4\n"


async def test_formats_from_format_or_mime_type_and_bad_formats():
    mcp = NotebookMCP()
    frame = pd.DataFrame({"a": [1]})
    mcp.resource(frame, name="as_md", format="markdown")
    mcp.resource(frame, name="as_json", mime_type="application/json")
    listed = {r["name"]: r["mimeType"] for r in (await rpc(mcp, "resources/list"))["resources"]}
    assert listed == {"as_md": "text/markdown", "as_json": "application/json"}
    assert (await read(mcp, "df://as_md"))["text"] == "| a |\n|---|\n| 1 |"
    assert strict_json((await read(mcp, "df://as_json"))["text"]) == [{"a": 1}]
    with pytest.raises(ValueError, match="format must be one of"):
        mcp.resource(frame, name="bad", format="xlsx")
    with pytest.raises(TypeError, match="format= is for DataFrames"):
        mcp.resource("text", name="bad", format="json")


async def test_a_frame_from_a_function_is_the_same_bounded_page():
    mcp = NotebookMCP()
    mcp.resource(lambda: numbers(1500), name="computed", uri="data://computed")
    contents = await read(mcp, "data://computed")
    assert len(pd.read_csv(io.StringIO(contents["text"]))) == 1000
    assert contents["_meta"]["mcp-notebook/page"]["totalRows"] == 1500
    assert "next" not in contents["_meta"]["mcp-notebook/page"]  # no page template here


async def test_removing_or_moving_a_frame_takes_its_templates_along():
    mcp = NotebookMCP()
    mcp.resource(pd.DataFrame({"a": [1]}), name="sales")
    mcp.resource(pd.DataFrame({"a": [2]}), name="sales", uri="data://sales")
    templates = (await rpc(mcp, "resources/templates/list"))["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == [
        "data://sales{?offset,limit,columns,format}",
        "data://sales/schema",
    ]
    mcp.remove("sales")
    assert (await rpc(mcp, "resources/templates/list"))["resourceTemplates"] == []
    assert (await rpc(mcp, "resources/list"))["resources"] == []


# -- live variables ------------------------------------------------------------------------


def watching(mcp: NotebookMCP, namespace: dict[str, Any]) -> tuple[VariableWatcher, list[str]]:
    updated: list[str] = []
    mcp.registry.subscribe(lambda kind, uri: updated.append(uri) if kind == "updated" else None)
    watcher = VariableWatcher(mcp, namespace)
    watcher()  # the cell that registered the resource ends
    return watcher, updated


async def test_a_variable_holding_a_frame_is_served_live_with_pages_and_schema():
    mcp = NotebookMCP()
    mcp.namespace = {"sales": pd.DataFrame({"units": [1, 2]})}
    mcp.resource(var="sales")
    assert [r["uri"] for r in (await rpc(mcp, "resources/list"))["resources"]] == ["df://sales"]
    assert (await read(mcp, "df://sales"))["text"] == "units\n1\n2\n"
    mcp.namespace["sales"] = pd.DataFrame({"units": [7, 8, 9]})
    assert (await read(mcp, "df://sales?offset=2"))["text"] == "units\n9\n"
    assert strict_json((await read(mcp, "df://sales/schema"))["text"])["rows"] == 3
    mcp.namespace["sales"] = "gone to lunch"
    now = await read(mcp, "df://sales")
    assert (now["mimeType"], now["text"]) == ("text/plain", "gone to lunch")
    assert "holds a str, not a DataFrame" in (await read_error(mcp, "df://sales/schema"))["message"]


async def test_a_frame_in_a_plain_variable_resource_renders_as_a_page():
    mcp = NotebookMCP()
    mcp.namespace = {"later": None}
    mcp.resource(var="later")  # not a frame yet: a plain resource://
    mcp.namespace["later"] = numbers(1200)
    contents = await read(mcp, "resource://later")
    assert contents["mimeType"] == "text/csv"
    assert contents["_meta"]["mcp-notebook/page"]["rows"] == 1000


def test_mutating_a_watched_frame_announces_it_and_its_schema():
    mcp = NotebookMCP()
    namespace = {"sales": pd.DataFrame({"units": [1, 2, 3]})}
    mcp.namespace = namespace
    mcp.resource(var="sales")
    watcher, updated = watching(mcp, namespace)
    watcher()
    assert updated == []  # a cell that changed nothing
    namespace["sales"].loc[2, "units"] = 10
    watcher()
    assert updated == ["df://sales", "df://sales/schema"]
    namespace["sales"]["extra"] = 1.0
    watcher()
    namespace["sales"] = namespace["sales"].copy()  # equal content, a new object
    watcher()
    assert len(updated) == 6


def test_large_frames_are_fingerprinted_from_a_bounded_sample():
    frame = pd.DataFrame({"a": np.arange(1_000_000), "b": np.zeros(1_000_000)})
    before = dataframes.fingerprint(frame)
    frame.loc[0, "b"] = 1.0  # the first rows are always in the sample
    after_first = dataframes.fingerprint(frame)
    frame.loc[999_999, "b"] = 1.0  # and so are the last
    after_last = dataframes.fingerprint(frame)
    frame.loc[123_457, "b"] = 1.0  # a row between samples: not seen, by design
    assert len({before, after_first, after_last}) == 3
    assert dataframes.fingerprint(frame) == after_last
    small = numbers(100)
    seen = dataframes.fingerprint(small)
    small.loc[57, "half"] = -1.0  # small frames are hashed whole
    assert dataframes.fingerprint(small) != seen


def test_numpy_arrays_and_plain_values_are_watched_too():
    mcp = NotebookMCP()
    namespace: dict[str, Any] = {"grid": np.zeros((3, 3)), "notes": ["a"]}
    mcp.namespace = namespace
    mcp.resource(var="grid", uri="grid://now")
    mcp.resource(var="notes")
    watcher, updated = watching(mcp, namespace)
    namespace["grid"][1, 1] = 5.0
    namespace["notes"].append("b")
    watcher()
    assert updated == ["grid://now", "resource://notes"]


# -- tool results --------------------------------------------------------------------------


async def test_a_returned_frame_is_a_bounded_markdown_table_and_records():
    mcp = NotebookMCP()
    frame = pd.DataFrame({"n": range(120), "label": [f"r|{i}" for i in range(120)]})

    @mcp.tool
    def table() -> pd.DataFrame:
        return frame

    @mcp.tool
    def column():
        return frame["n"].head(3)

    (definition, _) = (await rpc(mcp, "tools/list"))["tools"]
    assert definition["outputSchema"]["properties"]["result"]["type"] == "array"
    result = await call(mcp, "table")
    (block,) = result["content"]
    lines = block["text"].splitlines()
    assert lines[:3] == ["| n | label |", "|---|---|", "| 0 | r\\|0 |"]
    assert len([line for line in lines if line.startswith("| ")]) == 1 + dataframes.TOOL_ROWS
    assert lines[-1] == "_Showing the first 50 of 120 rows (70 more not shown)._"
    assert result["structuredContent"]["result"][:2] == [
        {"n": 0, "label": "r|0"},
        {"n": 1, "label": "r|1"},
    ]
    assert len(result["structuredContent"]["result"]) == dataframes.TOOL_ROWS
    assert result["_meta"]["mcp-notebook/rows"] == {"shown": 50, "total": 120}
    series = await call(mcp, "column")
    assert series["structuredContent"] == {"result": [{"n": 0}, {"n": 1}, {"n": 2}]}


async def test_json_results_turn_missing_values_into_null_and_timestamps_into_iso():
    mcp = NotebookMCP()

    @mcp.tool
    def stats() -> dict:
        return {
            "count": np.int64(3),
            "first": pd.Timestamp("2024-05-01 09:00"),
            "missing": pd.NaT,
            "na": pd.NA,
            "when": np.datetime64("2024-05-02T10:00"),
            "values": np.array([1.0, 2.5]),
            "day": dt.date(2024, 5, 3),
        }

    result = await call(mcp, "stats")
    expected = {
        "count": 3,
        "first": "2024-05-01T09:00:00",
        "missing": None,
        "na": None,
        "when": "2024-05-02T10:00",
        "values": [1.0, 2.5],
        "day": "2024-05-03",
    }
    assert result["structuredContent"] == expected
    assert strict_json(result["content"][0]["text"]) == expected


NOT_JSON = "non-finite float (NaN or Infinity), which is not JSON"


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        np.float64("-inf"),
        {"mean": float("nan")},
        [1.0, float("inf")],
        {"values": np.array([1.0, np.nan])},
    ],
    ids=["nan", "inf", "numpy-inf", "in-a-dict", "in-a-list", "in-an-array"],
)
async def test_a_nan_or_infinity_in_a_result_is_a_clear_tool_error(value):
    """JSON has no NaN: the tool fails saying so, instead of its value turning into null."""
    mcp = NotebookMCP()
    mcp.tool(name="untyped")(lambda: value)

    @mcp.tool
    def typed() -> float:  # once: "None is not of type 'number'"
        return float("nan")

    for name in ("untyped", "typed"):
        result = await call(mcp, name)
        assert result["isError"] is True, result
        assert NOT_JSON in result["content"][0]["text"], result
        assert "None is not of type" not in result["content"][0]["text"]


async def test_nan_in_a_frame_is_a_missing_value_and_null():
    mcp = NotebookMCP()
    mcp.tool(name="table")(lambda: pd.DataFrame({"f": [1.5, np.nan, np.inf]}))
    result = await call(mcp, "table")
    assert result["isError"] is False
    assert result["structuredContent"]["result"] == [{"f": 1.5}, {"f": None}, {"f": None}]


async def test_a_list_mixing_text_frames_and_figures_is_one_block_each():
    from matplotlib.figure import Figure

    from mcp_notebook.registry.content import CONVERTERS

    mcp = NotebookMCP()
    figure = Figure(figsize=(2, 1), dpi=50)
    mcp.tool(name="report")(lambda: ["Units:", pd.DataFrame({"n": [1]}), figure])
    mcp.tool(name="plain")(lambda: ["a", 1, {"b": 2}])
    CONVERTERS.append(rich.convert)
    try:
        report = await call(mcp, "report")
        plain = await call(mcp, "plain")
    finally:
        CONVERTERS.remove(rich.convert)
    assert [block["type"] for block in report["content"]] == ["text", "text", "image"]
    assert report["content"][1]["text"] == "| n |\n|---|\n| 1 |"
    assert png_size(base64.b64decode(report["content"][2]["data"])) == (100, 50)
    assert plain["structuredContent"] == {"result": ["a", 1, {"b": 2}]}


async def test_bare_numbers_from_numpy_are_json_text():
    mcp = NotebookMCP()
    mcp.tool(name="count")(lambda: np.int64(7))
    mcp.tool(name="ratio")(lambda: np.float32(0.5))
    texts = [(await call(mcp, name))["content"][0]["text"] for name in ("count", "ratio")]
    assert texts == ["7", "0.5"]


async def test_bytes_returned_under_a_bytes_annotation_are_a_blob_and_base64():
    mcp = NotebookMCP()

    @mcp.tool
    def raw() -> bytes:
        return b"%PDF-1.4"

    @mcp.tool
    def pages() -> list[bytes]:
        return [b"\x00", b"\x01"]

    result = await call(mcp, "raw")
    assert result["content"][0]["resource"]["blob"] == base64.b64encode(b"%PDF-1.4").decode()
    assert result["structuredContent"] == {"result": base64.b64encode(b"%PDF-1.4").decode()}
    both = await call(mcp, "pages")
    assert [block["type"] for block in both["content"]] == ["resource", "resource"]
    assert both["structuredContent"] == {"result": ["AA==", "AQ=="]}


# -- argument coercion ---------------------------------------------------------------------


async def test_frames_dates_paths_and_bytes_as_arguments():
    mcp = NotebookMCP()
    seen: dict[str, Any] = {}

    @mcp.tool
    def ingest(
        rows: pd.DataFrame,
        when: dt.datetime,
        day: dt.date,
        where: Path,
        payload: bytes,
        extra: Optional[list[bytes]] = None,  # noqa: UP045 - typing spellings work too
    ) -> str:
        seen.update(rows=rows, when=when, day=day, where=where, payload=payload, extra=extra)
        return "ok"

    (definition,) = (await rpc(mcp, "tools/list"))["tools"]
    properties = definition["inputSchema"]["properties"]
    assert properties["rows"]["type"] == "array"
    assert properties["rows"]["items"] == {"type": "object"}
    assert properties["when"] == {"type": "string", "format": "date-time"}
    assert properties["day"] == {"type": "string", "format": "date"}
    assert properties["where"]["format"] == "path"
    assert properties["payload"] == {"type": "string", "contentEncoding": "base64"}
    assert {"type": "string", "contentEncoding": "base64"} in [
        branch.get("items") for branch in properties["extra"]["anyOf"]
    ]
    result = await call(
        mcp,
        "ingest",
        rows=[{"region": "n", "units": 1}, {"region": "s", "units": None}],
        when="2024-05-01T09:30:00+02:00",
        day="2024-05-03",
        where="/tmp/sales.csv",
        payload=base64.b64encode(b"\x00\x01binary").decode(),
        extra=[base64.b64encode(b"x").decode()],
    )
    assert result["content"][0]["text"] == "ok"
    pd.testing.assert_frame_equal(
        seen["rows"], pd.DataFrame({"region": ["n", "s"], "units": [1.0, np.nan]})
    )
    assert seen["when"] == dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert seen["day"] == dt.date(2024, 5, 3)
    assert seen["where"] == Path("/tmp/sales.csv")
    assert (seen["payload"], seen["extra"]) == (b"\x00\x01binary", [b"x"])


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"payload": "not base64!"}, "payload"),
        ({"rows": [1, 2]}, "rows"),
        ({"day": "someday"}, "day"),
    ],
)
async def test_bad_coerced_arguments_are_tool_errors_naming_the_field(arguments, field):
    mcp = NotebookMCP()

    @mcp.tool
    def take(payload: bytes = b"", rows: pd.DataFrame | None = None, day: dt.date | None = None):
        return "ran"

    result = await call(mcp, "take", **arguments)
    assert result["isError"]
    assert field in result["content"][0]["text"]


# -- rich values (the kernel converter, called directly) -----------------------------------


def test_figures_become_pngs_at_their_own_size_bounded_on_the_long_side():
    from matplotlib.figure import Figure

    small = Figure(figsize=(4, 3), dpi=100)
    small.add_subplot().plot([1, 3, 2])
    (block,) = rich.convert(small)
    assert block["type"] == "image" and block["mimeType"] == "image/png"
    assert png_size(base64.b64decode(block["data"])) == (400, 300)
    huge = Figure(figsize=(40, 10), dpi=100)  # 4000 x 1000 pixels
    (block,) = rich.convert(huge.add_subplot())  # an Axes stands for its figure
    assert png_size(base64.b64decode(block["data"])) == (rich.MAX_SIDE, rich.MAX_SIDE // 4)


def test_pil_images_become_bounded_pngs():
    from PIL import Image

    (block,) = rich.convert(Image.new("RGB", (3200, 800), "red"))
    assert png_size(base64.b64decode(block["data"])) == (rich.MAX_SIDE, rich.MAX_SIDE // 4)
    assert rich.convert({"plain": "dict"}) is None
    assert rich.convert(object()) is None  # no shell, no rich repr: the default applies


def test_the_core_imports_neither_ipython_nor_pandas():
    code = (
        "import sys, mcp_notebook.registry.dataframes, mcp_notebook.registry.coercion, "
        "mcp_notebook.registry.content, mcp_notebook.app; "
        "print(sorted(m for m in ('IPython', 'pandas', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

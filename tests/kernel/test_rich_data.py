"""DataFrames, plots and display objects through the official SDK client, in a real kernel."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import struct
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import MODES, Served, connect, start_server
from tests.e2e.serve.test_serve import ServeProcess
from tests.schema import validate
from tests.waiting import OPEN_GET_STREAMS, until

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "dataframes.ipynb"

SETUP = r"""
import datetime as dt
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import HTML, SVG, Image as IPyImage, Markdown
from PIL import Image as PILImage

rows = 2500
sales = pd.DataFrame({
    "region": pd.Categorical(np.array(["north", "south", "east", "west"])[np.arange(rows) % 4]),
    "units": np.arange(rows),
    "price": np.where(np.arange(rows) % 10 == 3, np.nan, 9.5),
    "day": pd.date_range("2024-01-01", periods=rows, freq="D"),
})
mcp.resource(sales, name="sales", description="Daily units by region")

live = pd.DataFrame({"region": ["north", "south"], "units": [120, 80]})
mcp.resource(var="live")
wide = pd.DataFrame(np.zeros((200_000, 3)), columns=["a", "b", "c"])  # sampled, not hashed
mcp.resource(var="wide")

@mcp.tool
def plot(width: float = 4, height: float = 3):
    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    ax.plot(sales["units"].head(20))
    return fig

@mcp.tool
def picture():
    return PILImage.new("RGB", (64, 32), "blue")

def _png(width, height):
    buffer = __import__("io").BytesIO()
    PILImage.new("RGB", (width, height), "green").save(buffer, "PNG")
    return buffer.getvalue()

class Gauge:
    def _repr_png_(self):
        return _png(12, 10)

    def _repr_html_(self):
        return "<b>gauge</b>"

class Note:
    def _repr_markdown_(self):
        return "**note**"

    def _ipython_display_(self):
        raise AssertionError("displayed instead of returned")

DISPLAYS = {
    "markdown": lambda: Markdown("# Title\n\n*emphasis*"),
    "html": lambda: HTML("<table><tr><td>1</td></tr></table>"),
    "svg": lambda: SVG('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>'),
    "image": lambda: IPyImage(data=_png(20, 8)),
    "big": lambda: IPyImage(data=_png(3000, 600)),
    "gauge": Gauge,
    "note": Note,
}

@mcp.tool
def show(kind: str):
    return DISPLAYS[kind]()

@mcp.tool
def top(n: int = 3) -> pd.DataFrame:
    return sales.nlargest(n, "units")

@mcp.tool
def everything():
    return sales

@mcp.tool
def stats() -> dict:
    mean = float(sales["price"].head(4).mean(skipna=False))
    return {
        "mean_price": None if mean != mean else mean,  # JSON has no NaN: say "missing"
        "first_day": sales["day"].iloc[0],
        "no_day": pd.NaT,
        "units": sales["units"].head(3).to_numpy(),
        "total": sales["units"].sum(),
    }

@mcp.tool
def ingest(
    rows: pd.DataFrame, when: dt.datetime, day: dt.date, where: Path, payload: bytes
) -> dict:
    return {
        "rows": len(rows),
        "units": int(rows["units"].sum()),
        "hour": when.hour,
        "weekday": day.weekday(),
        "suffix": where.suffix,
        "payload": payload.decode(),
    }
"""


@pytest.fixture(scope="module")
def served(kernel):
    return start_server(kernel, SETUP)


def dump(model) -> dict:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def png_size(data: str) -> tuple[int, int]:
    raw = base64.b64decode(data)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR"
    return struct.unpack(">II", raw[16:24])


def strict_json(text: str):
    def refuse(token: str):
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


# -- resources -----------------------------------------------------------------------------


@MODES
async def test_pages_queries_and_schema_of_a_frame(served, mode):
    async with connect(served, mode) as client:
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        assert listed["df://sales"].mime_type == "text/csv"
        assert listed["df://sales"].size > 10_000
        assert "at most the first 1000 rows" in listed["df://sales"].description
        templates = [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ]
        assert "df://sales{?offset,limit,columns,format}" in templates
        assert "df://sales/schema" in templates

        first = await client.read_resource("df://sales")
        validate(dump(first), "ReadResourceResult")
        (contents,) = first.contents
        frame = pd.read_csv(io.StringIO(contents.text))
        assert len(frame) == 1000 and list(frame.columns) == ["region", "units", "price", "day"]
        page = dump(first)["contents"][0]["_meta"]["mcp-notebook/page"]
        assert page["totalRows"] == 2500
        assert page["next"] == "df://sales?offset=1000&limit=1000&format=csv"

        query = "df://sales?offset=2497&limit=5&columns=day,price,units&format=json"
        last = await client.read_resource(query)
        validate(dump(last), "ReadResourceResult")
        assert last.contents[0].mime_type == "application/json"
        assert strict_json(last.contents[0].text) == [
            {"day": "2030-11-02T00:00:00", "price": 9.5, "units": 2497},
            {"day": "2030-11-03T00:00:00", "price": 9.5, "units": 2498},
            {"day": "2030-11-04T00:00:00", "price": 9.5, "units": 2499},
        ]
        table = await client.read_resource("df://sales?offset=3&limit=1&format=markdown")
        assert table.contents[0].text.splitlines()[2] == "| west | 3 |  | 2024-01-04T00:00:00 |"

        schema = strict_json((await client.read_resource("df://sales/schema")).contents[0].text)
        assert schema["rows"] == 2500
        assert [(c["name"], c["dtype"], c["nulls"]) for c in schema["columns"]] == [
            ("region", "category", 0),
            ("units", "int64", 0),
            ("price", "float64", 250),
            ("day", str(schema["columns"][3]["dtype"]), 0),
        ]
        assert schema["columns"][3]["dtype"].startswith("datetime64")
        assert schema["sample"][0] == {
            "region": "north",
            "units": 0,
            "price": 9.5,
            "day": "2024-01-01T00:00:00",
        }


LIVE = 'live = pd.DataFrame({"region": ["north", "south"], "units": [120, 80]})'


async def test_subscribers_hear_when_a_cell_mutates_a_frame(served, afterwards):
    updates: list[str] = []
    prompts_changed = asyncio.Event()
    barriers = iter(range(1_000))

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            updates.append(message.params.uri)
        if getattr(message, "method", None) == "notifications/prompts/list_changed":
            prompts_changed.set()

    async def after(cell: str) -> list[str]:
        """The updates ``cell`` announces: all of them, by a barrier on the GET stream.

        The next cell changes the prompts; notifications travel in order on the one GET
        stream, so every update of ``cell`` has arrived once that change has.
        """
        updates.clear()
        prompts_changed.clear()
        served.kernel.run(cell)
        served.kernel.run(f'mcp.prompt("barrier", "barrier {next(barriers)}")')
        await asyncio.wait_for(prompts_changed.wait(), 10)
        return sorted(updates)

    afterwards(served.kernel, 'mcp.remove("barrier")')

    served.kernel.run(LIVE)
    async with connect(served, "legacy", message_handler=on_message) as client:
        await client.subscribe_resource("df://live")
        await client.subscribe_resource("df://live/schema")
        await client.subscribe_resource("df://wide")
        assert "north,120" in (await client.read_resource("df://live")).contents[0].text
        await until(lambda: served.kernel.eval(OPEN_GET_STREAMS) >= 1, "the GET stream")

        assert await after('live.loc[0, "units"] = 1') == ["df://live", "df://live/schema"]
        assert "north,1\n" in (await client.read_resource("df://live")).contents[0].text
        assert await after("live = live.assign(price=[9.5, 11.0])") == [
            "df://live",
            "df://live/schema",
        ]
        assert await after('wide.loc[0, "a"] += 1') == ["df://wide"]

        assert await after("unrelated = 1") == []


async def test_a_2026_listen_stream_hears_when_a_cell_mutates_a_frame(served):
    served.kernel.run(LIVE)
    async with connect(served, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        watched = ["df://live", "df://live/schema"]
        async with client.listen(resource_subscriptions=watched) as subscription:
            served.kernel.run('live.loc[1, "units"] = 2')
            first = await asyncio.wait_for(subscription.__anext__(), 10)
            second = await asyncio.wait_for(subscription.__anext__(), 10)
            assert sorted([first.uri, second.uri]) == watched
        assert "south,2\n" in (await client.read_resource("df://live")).contents[0].text


# -- tool results --------------------------------------------------------------------------


@MODES
async def test_a_figure_arrives_as_a_png_of_its_size_and_is_not_shown_again(served, mode):
    async with connect(served, mode) as client:
        result = await client.call_tool("plot", {"width": 4, "height": 3})
        validate(dump(result), "CallToolResult")
        (image,) = result.content
        assert (image.type, image.mime_type) == ("image", "image/png")
        assert png_size(image.data) == (400, 300)
        huge = await client.call_tool("plot", {"width": 40, "height": 20})
        assert png_size(huge.content[0].data) == (1600, 800)  # bounded on the long side
    # The figures were closed: the inline backend has nothing to show under the next cell.
    _, output = served.kernel.run("print(plt.get_fignums())")
    assert output == "[]\n"


@MODES
async def test_images_and_display_objects_become_content(served, mode):
    async with connect(served, mode) as client:

        async def show(kind: str) -> dict:
            result = await client.call_tool("show", {"kind": kind})
            assert not result.is_error, result
            return validate(dump(result), "CallToolResult")["content"]

        (pil,) = dump(await client.call_tool("picture", {}))["content"]
        assert pil["mimeType"] == "image/png" and png_size(pil["data"]) == (64, 32)
        assert await show("markdown") == [{"type": "text", "text": "# Title\n\n*emphasis*"}]
        assert await show("html") == [
            {"type": "text", "text": "<table><tr><td>1</td></tr></table>"}
        ]
        (svg,) = await show("svg")
        assert svg["type"] == "resource"
        assert svg["resource"]["mimeType"] == "image/svg+xml"
        assert svg["resource"]["text"].startswith("<svg")
        (image,) = await show("image")
        assert image["mimeType"] == "image/png" and png_size(image["data"]) == (20, 8)
        (big,) = await show("big")
        assert png_size(big["data"]) == (1600, 320)
        (gauge,) = await show("gauge")  # _repr_png_ wins over _repr_html_
        assert gauge["type"] == "image" and png_size(gauge["data"]) == (12, 10)
        assert await show("note") == [{"type": "text", "text": "**note**"}]


@MODES
async def test_a_returned_frame_is_a_table_and_bounded_records(served, mode):
    async with connect(served, mode) as client:
        top = await client.call_tool("top", {"n": 2})
        validate(dump(top), "CallToolResult")
        assert top.content[0].text.splitlines() == [
            "| region | units | price | day |",
            "|---|---|---|---|",
            "| west | 2499 | 9.5 | 2030-11-04T00:00:00 |",
            "| east | 2498 | 9.5 | 2030-11-03T00:00:00 |",
        ]
        assert top.structured_content["result"][1] == {
            "region": "east",
            "units": 2498,
            "price": 9.5,
            "day": "2030-11-03T00:00:00",
        }
        whole = await client.call_tool("everything", {})
        assert whole.content[0].text.endswith(
            "_Showing the first 50 of 2500 rows (2450 more not shown)._"
        )
        assert len(whole.structured_content["result"]) == 50
        assert whole.structured_content["result"][3]["price"] is None


@MODES
async def test_missing_values_and_timestamps_round_trip_as_null_and_iso(served, mode):
    async with connect(served, mode) as client:
        result = await client.call_tool("stats", {})
    expected = {
        "mean_price": None,
        "first_day": "2024-01-01T00:00:00",
        "no_day": None,
        "units": [0, 1, 2],
        "total": 3123750,
    }
    assert result.structured_content == expected
    assert strict_json(result.content[0].text) == expected


@MODES
async def test_frames_dates_paths_and_bytes_as_arguments(served, mode):
    async with connect(served, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        properties = tools["ingest"].input_schema["properties"]
        assert properties["rows"]["type"] == "array"
        assert properties["when"]["format"] == "date-time"
        assert properties["day"]["format"] == "date"
        assert properties["payload"]["contentEncoding"] == "base64"
        result = await client.call_tool(
            "ingest",
            {
                "rows": [{"region": "north", "units": 3}, {"region": "south", "units": 4}],
                "when": "2024-05-01T17:45:00Z",
                "day": "2024-05-04",
                "where": "/data/sales.parquet",
                "payload": base64.b64encode("grüße".encode()).decode(),
            },
        )
        assert result.structured_content == {
            "rows": 2,
            "units": 7,
            "hour": 17,
            "weekday": 5,
            "suffix": ".parquet",
            "payload": "grüße",
        }
        bad = await client.call_tool(
            "ingest",
            {
                "rows": [],
                "when": "2024-05-01T17:45:00Z",
                "day": "2024-05-04",
                "where": "x",
                "payload": "***",
            },
        )
        assert bad.is_error and "payload" in bad.content[0].text


# -- the example notebook ------------------------------------------------------------------


@pytest.fixture(scope="module")
def notebook():
    process = ServeProcess(str(NOTEBOOK), "--port", "0", "--no-auth")
    try:
        yield Served(kernel=None, url=process.wait_for_url(), token=None)
    finally:
        process.stop()


async def test_the_dataframes_notebook_serves_what_it_shows(notebook):
    async with connect(notebook, "auto") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"top_regions", "plot_units", "add_orders", "orders_since"} <= tools
        schema = strict_json((await client.read_resource("df://orders/schema")).contents[0].text)
        assert schema["rows"] == 100_000
        page = await client.read_resource("df://orders?offset=10&limit=2&format=json")
        assert [row["order_id"] for row in strict_json(page.contents[0].text)] == [10, 11]
        plot = await client.call_tool("plot_units", {"region": "north"})
        assert plot.content[0].mime_type == "image/png"
        assert png_size(plot.content[0].data) == (640, 360)
        top = await client.call_tool("top_regions", {"n": 2})
        assert len(top.structured_content["result"]) == 2
        since = await client.call_tool("orders_since", {"day": "2024-12-01", "limit": 3})
        assert [row["day"] for row in since.structured_content["result"]] == [
            "2024-12-01T00:00:00",
            "2024-12-01T00:05:00",
            "2024-12-01T00:10:00",
        ]
        added = await client.call_tool(
            "add_orders", {"rows": [{"region": "north", "units": 5, "price": 9.5}]}
        )
        assert added.structured_content == {"result": 100_001}

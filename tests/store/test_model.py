"""The catalog (gsets and types) — pure, no Spark."""

from __future__ import annotations

import pytest

from store.errors import BundleError
from store.model import AttrType, Catalog

GSETS = {
    "data": {"contains": [["Row", "Table"], ["Column", "ColumnGroup"], ["ColumnGroup", "Table"],
                          ["Version", "Row"], ["Version", "Column"], ["Version", "WebPage"],
                          ["File", "Dataset"]]},
    "process": {"contains": [["PigJob", "PigScript"], ["MRJob", "PigJob"]]},
}


@pytest.fixture()
def cat() -> Catalog:
    return Catalog.empty().merge_gsets(GSETS)


def test_containment_is_reflexive_and_transitive(cat):
    assert cat.leq("Row", "Row")
    assert cat.leq("Version", "Table")  # Version ⪯ Row ⪯ Table
    assert cat.leq("Column", "Table")
    assert not cat.leq("Table", "Row")
    assert not cat.leq("Row", "Column")


def test_auto_max_and_min_are_added_only_where_absent(cat):
    # Data has three maximal granularities (Table, WebPage, Dataset) and two minimal ones.
    assert "MaxData" in cat.auto and "MinData" in cat.auto
    assert cat.maximum("data") == "MaxData" and cat.minimum("data") == "MinData"
    assert cat.leq("MinData", "Version") and cat.leq("Dataset", "MaxData")
    # Process is a chain: MRJob ⪯ PigJob ⪯ PigScript has a unique max and min already.
    assert "MaxProcess" not in cat.auto and "MinProcess" not in cat.auto
    assert cat.maximum("process") == "PigScript" and cat.minimum("process") == "MRJob"


def test_types_are_order_insensitive_sets(cat):
    cat = cat.merge_types([{"name": "Cell", "granularities": ["Row", "Column"]}])
    assert cat.type_by_name("Cell").key == "Column+Row"
    assert cat.type_by_granularities(["Column", "Row"]).name == "Cell"
    assert cat.type_by_name("Row").granularities == ("Row",)
    assert cat.type_by_granularities(["Row", "Table"]) is None  # comparable


@pytest.mark.parametrize(
    "types, message",
    [
        ([{"name": "Bad", "granularities": ["Row", "Table"]}], "comparable"),
        ([{"name": "Mixed", "granularities": ["Row", "PigJob"]}], "mixes data and process"),
        ([{"name": "X", "granularities": ["Rowz"]}], "unknown granularity 'Rowz'"),
        ([{"name": "A", "granularities": ["Row", "Column"]}, {"name": "B", "granularities": ["Column", "Row"]}],
         "already named 'A'"),
        ([{"name": "Page", "granularities": ["WebPage"]}], "two names for one set"),
        ([{"name": "W", "granularities": ["Row", "Column"], "attributes": {"a": "date"}}], "unknown type 'date'"),
    ],
    ids=["comparable", "mixed-kinds", "unknown-granularity", "two-names", "alias-of-granularity", "bad-attr-type"],
)
def test_type_errors_name_the_record(cat, types, message):
    with pytest.raises(BundleError) as e:
        cat.merge_types(types)
    assert message in str(e.value)
    assert "section 'types', record" in str(e.value)


def test_gset_errors():
    with pytest.raises(BundleError, match="cycle"):
        Catalog.empty().merge_gsets({"data": {"contains": [["A", "B"], ["B", "C"], ["C", "A"]]}})
    with pytest.raises(BundleError, match="unique across both gsets"):
        Catalog.empty().merge_gsets({"data": {"contains": [["A", "B"]]}, "process": {"contains": [["A", "P"]]}})
    with pytest.raises(BundleError, match="unknown gset"):
        Catalog.empty().merge_gsets({"datum": {"contains": []}})


def test_catalog_round_trips_through_json(cat):
    cat = cat.merge_types([{"name": "WebPage", "granularities": ["WebPage"],
                            "attributes": {"license": "string", "authScore": "int"}}])
    back = Catalog.from_json(cat.to_json())
    assert back == cat
    assert back.type_by_name("WebPage").attribute("authScore") is AttrType.INT
    assert back.leq("Version", "Table")


def test_later_bundles_extend_the_gsets(cat):
    more = cat.merge_gsets({"data": {"contains": [["Cell", "Row"]]}})
    assert more.leq("Cell", "Table")
    assert cat.kind_of("Cell") is None  # the original is unchanged (immutable)

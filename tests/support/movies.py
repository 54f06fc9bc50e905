"""The Ibis paper's Table 1 queries over examples/movies.json, with their answers (docs/movies.md)."""

from __future__ import annotations

from iql.binder import WARN_AGGREGATE, WARN_NOT_EXISTS

# Table 1 (Ibis Section 6), verbatim but for the parenthesised descriptions, which become the
# string ids of examples/movies.json; expected answers as sets of ids (docs/movies.md).
TABLE1 = [
    ("q1", "select p.id from WebPage p, Version v where p influences(2) v and "
           "v.id = 'avatar_lead_actor_v1';", {("imdb_page",)}, ()),
    ("q2", "select d.id from AnyData d, Table t where d influences(2) t and "
           "t.id = 'combined_table';", {("map_outputs",), ("combined_table",)}, ()),
    ("q3", "select t.id from MRTaskAttempt a, Table t where t feeds a and "
           "a.id = 'merge_map_task2_attempt1';", {("ymovies_table",)}, ()),
    ("q4", "select t.id from PigScript p, PigJob j, AnyData d1, AnyData d2, Table t "
           "where p.id = 'extract_script' and j under p and j.version = 3 and j emits d1 "
           "and d1 influences(2) d2 and d2 under t;", {("ymovies_table",), ("combined_table",)}, ()),
    ("q5", "select v.id from Version v, Table t where t.id = 'combined_table' and v under t and "
           "not exists (select * from WebPage source where source influences(2) v "
           "and source.license != 'yahoo');", {("avatar_lead_actor_v2",)}, (WARN_NOT_EXISTS,)),
    ("q6", "select v.id, source.authScore from Version v, WebPage source "
           "where source influences(2) v and source.authScore = "
           "(select max(source2.authScore) from Version v2, WebPage source2, "
           "(Row,Column) commonParent where source2 influences(2) v2 and "
           "v under commonParent and v2 under commonParent);",
     {("avatar_lead_actor_v2", 5)}, (WARN_AGGREGATE,)),
]

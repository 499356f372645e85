-- memlake episodes in Amazon Athena (Glue Data Catalog), read straight from the lake bucket.
--
-- Replace <bucket> with the stack's LakeBucketName output (add <prefix>/ after it when
-- MEMLAKE_PREFIX is set), then run the three statements one at a time in the Athena console.
-- The column lists are generated from memlake.lake.schema by infra/generate_functions.py.
--
-- Layout: s3://<bucket>/tenants/<tenant>/tables/episodes/<segment ULID>.parquet. Segments are
-- immutable; a row is versioned: an update or delete is a newer row with the same id (a delete
-- sets _deleted). `tenant` is an injected projection: every query MUST say
-- WHERE tenant = '...', which also keeps one query on one tenant's data.

CREATE DATABASE IF NOT EXISTS memlake;

-- Every stored version of every episode row (what the Parquet files hold).
CREATE EXTERNAL TABLE IF NOT EXISTS memlake.episode_versions (
  -- BEGIN GENERATED COLUMNS
  `id` string,
  `content` string,
  `summary` string,
  `title` string,
  `context` string,
  `metadata` string,
  `entity_ids` array<string>,
  `tags` array<string>,
  `created_at` timestamp,
  `updated_at` timestamp,
  `started_at` timestamp,
  `ended_at` timestamp,
  `timezone` string,
  `platform` string,
  `client` string,
  `model` string,
  `voice_mode` boolean,
  `input_modalities` array<string>,
  `output_modalities` array<string>,
  `qualities` string,
  `source_thread_id` string,
  `revision` bigint,
  `previous_version` bigint,
  `_deleted` boolean,
  `_seq` bigint
  -- END GENERATED COLUMNS
)
PARTITIONED BY (`tenant` string)
STORED AS PARQUET
LOCATION 's3://<bucket>/tenants/'
TBLPROPERTIES (
  'projection.enabled' = 'true',
  'projection.tenant.type' = 'injected',
  'storage.location.template' = 's3://<bucket>/tenants/${tenant}/tables/episodes/',
  'parquet.compression' = 'ZSTD'
);

-- The live episodes: the newest version of each id, without deleted ones.
-- Newest = the greatest _seq (every row carries the manifest version that committed it, and
-- compaction keeps it), ties broken by the segment's ULID file name. Caveat, rare and cleared
-- by GC: rows of a segment whose commit never happened (a crashed writer, or a lost race) show
-- until GC removes it (15 min grace). For an exact point-in-time read, read the files the
-- manifest lists (docs/deploy.md, "DuckDB").
CREATE OR REPLACE VIEW memlake.episodes AS
SELECT
  -- BEGIN GENERATED VIEW COLUMNS
  `id`,
  `content`,
  `summary`,
  `title`,
  `context`,
  `metadata`,
  `entity_ids`,
  `tags`,
  `created_at`,
  `updated_at`,
  `started_at`,
  `ended_at`,
  `timezone`,
  `platform`,
  `client`,
  `model`,
  `voice_mode`,
  `input_modalities`,
  `output_modalities`,
  `qualities`,
  `source_thread_id`,
  `revision`,
  `previous_version`,
  -- END GENERATED VIEW COLUMNS
  tenant
FROM (
  SELECT
    v.*,
    row_number() OVER (
      PARTITION BY tenant, id
      ORDER BY coalesce(_seq, 0) DESC,
               regexp_extract("$path", '([0-9A-Za-z]{26})\.parquet$', 1) DESC
    ) AS version_rank
  FROM memlake.episode_versions v
) latest
WHERE version_rank = 1 AND NOT _deleted;

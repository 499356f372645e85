-- The live episodes of one tenant in DuckDB, read straight from the lake's Parquet segments:
-- the newest version of each id, without deleted ones (the same rule as the Athena view in
-- infra/athena/episodes.sql). Before running, point the variable at the tenant's folder:
--   SET VARIABLE episodes = 's3://<bucket>/tenants/<tenant>/tables/episodes';   -- or a local
--   SET VARIABLE episodes = './memlake-data/tenants/<tenant>/tables/episodes';   -- lake dir
-- (S3 needs `INSTALL httpfs; LOAD httpfs;` and CREATE SECRET (TYPE s3, PROVIDER credential_chain).)
SELECT * EXCLUDE (_deleted, _seq, filename, version_rank)
FROM (
  SELECT
    *,
    row_number() OVER (
      PARTITION BY id
      ORDER BY coalesce(_seq, 0) DESC,
               regexp_extract(filename, '([0-9A-Za-z]{26})\.parquet$', 1) DESC
    ) AS version_rank
  FROM read_parquet(getvariable('episodes') || '/*.parquet', filename = true, union_by_name = true)
)
WHERE version_rank = 1 AND NOT _deleted
ORDER BY id;

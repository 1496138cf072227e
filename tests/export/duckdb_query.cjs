// Loads NDJSON files into DuckDB (npm's @duckdb/node-api) and prints the rows of one SQL
// query as a JSON array on stdout. Usage: node duckdb_query.cjs NODE_MODULES_DIR SQL
// Exit 3 when the module cannot be loaded (the test skips), 1 when the query fails.
'use strict';
let duckdb;
try {
  duckdb = require(require('path').join(process.argv[2], '@duckdb', 'node-api'));
} catch (e) {
  process.stderr.write('cannot load @duckdb/node-api: ' + e.message + '\n');
  process.exit(3);
}
(async () => {
  const instance = await duckdb.DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const result = await connection.runAndReadAll(process.argv[3]);
  process.stdout.write(JSON.stringify(result.getRowObjectsJson()) + '\n');
})().catch((e) => {
  process.stderr.write(String(e && e.message || e) + '\n');
  process.exit(1);
});

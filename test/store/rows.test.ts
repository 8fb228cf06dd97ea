import Database from 'better-sqlite3';
import t from 'tap';
import { namedRows } from '../../lib/store/rows.js';

function world() {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, weight REAL, note TEXT, data BLOB);
           INSERT INTO items VALUES (1, 'one', 1.5, NULL, x'00ff'), (2, 'two', NULL, 'n', NULL), (3, '', 0, '', x'')`);
  return db;
}

const SQL = 'SELECT id, name AS label, weight, note, data, id * 2 AS twice FROM items WHERE id >= ? ORDER BY id';

t.test('ROWS: named rows equal the objects better-sqlite3 builds, members in column order', async (t) => {
  const db = world();
  const named = namedRows(db.prepare<[number], Record<string, unknown>>(SQL));
  const plain = db.prepare<[number], Record<string, unknown>>(SQL);
  t.strictSame(named.all(1), plain.all(1), 'all()');
  t.strictSame(named.all(1).map((row) => Object.keys(row)), plain.all(1).map((row) => Object.keys(row)), 'member order');
  t.strictSame(named.get(2), plain.get(2), 'get()');
  t.equal(named.get(9), undefined, 'get() of no row is undefined');
  t.strictSame(named.all(9), [], 'all() of no rows is empty');
});

t.test('ROWS: each row is an object of its own; changing one changes no other, and no later read', async (t) => {
  const db = world();
  const named = namedRows(db.prepare<[number], { id: number; label: string }>('SELECT id, name AS label FROM items WHERE id >= ?'));
  const [first, second] = named.all(1);
  if (first === undefined || second === undefined) throw new Error('two rows expected');
  first.label = 'changed';
  t.equal(second.label, 'two');
  t.equal(named.get(1)?.label, 'one');
});

t.test('ROWS: a repeated column name keeps the last value, as better-sqlite3 does', async (t) => {
  const db = world();
  const sql = 'SELECT id AS x, name AS x FROM items WHERE id = ?';
  t.strictSame(namedRows(db.prepare<[number], { x: unknown }>(sql)).get(1), db.prepare<[number], { x: unknown }>(sql).get(1));
});

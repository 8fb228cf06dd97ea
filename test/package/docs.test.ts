import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';

// docs/ keeps the spec and the contract decisions with the code, so a clone (and the README's
// "contract N" references) has them; they must be the project's documents word for word.

const DOCUMENTS = ['spec/assigned-worker-task-api-v1.md', 'design/contract.md'] as const;

for (const document of DOCUMENTS) {
  const copy = new URL(`../../docs/${document}`, import.meta.url);
  const shared = new URL(`../../../shared/${document}`, import.meta.url);
  t.test(`DOCS: docs/${document} is the project's document, where the shared original is at hand`, { skip: existsSync(shared) ? false : `no original at ${shared.pathname}` }, async (t) => {
    t.equal(readFileSync(copy, 'utf8'), readFileSync(shared, 'utf8'));
  });
}

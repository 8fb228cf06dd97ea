import FindMyWay from 'find-my-way';
import type { HttpMethod, OperationSpec } from './operations.js';

export interface RouteMatch {
  /** Operations registered for the matched path, by method. */
  readonly operations: ReadonlyMap<string, OperationSpec>;
  /** The `Allow` header value for this path. */
  readonly allow: string;
  /** Decoded `{id}` path parameter, when the path has one. */
  readonly id: string | undefined;
}

/** A class, so that find-my-way's untyped `store` can be narrowed back to it. */
class PathEntry {
  readonly operations = new Map<string, OperationSpec>();
  allow = '';
}

/**
 * Matches a path to its operations. Each path pattern is registered once, whatever its methods,
 * so find-my-way's static-over-parameter priority decides the path first and the method is looked
 * up afterwards: `DELETE /tasks/available` is a 405 with `Allow: GET`, never `PATCH /tasks/{id}`.
 */
export class Router {
  readonly #router = FindMyWay({
    ignoreTrailingSlash: false,
    ignoreDuplicateSlashes: false,
    caseSensitive: true,
    // An id of any length must reach the shape check (step 6, a 400), not miss the route (a 404);
    // node:http's 16 KB header limit bounds the URL anyway.
    maxParamLength: 16_384,
  });
  readonly #paths = new Map<string, PathEntry>();

  constructor(operations: readonly OperationSpec[]) {
    for (const operation of operations) {
      let entry = this.#paths.get(operation.path);
      if (entry === undefined) {
        entry = new PathEntry();
        this.#paths.set(operation.path, entry);
        this.#router.on('GET', operation.path.replace('{id}', ':id'), () => undefined, entry);
      }
      entry.operations.set(operation.method, operation);
      entry.allow = [...entry.operations.keys()].sort(methodOrder).join(', ');
    }
  }

  find(path: string): RouteMatch | null {
    const found = this.#router.find('GET', path);
    if (found === null) return null;
    const entry: unknown = found.store;
    if (!(entry instanceof PathEntry)) return null;
    const id = found.params['id'];
    // find-my-way lets a parameter match nothing (`/tasks/`, `/tasks//claim`): such paths are unknown.
    if (id === '') return null;
    return { operations: entry.operations, allow: entry.allow, id };
  }
}

const ORDER: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH'];

function methodOrder(a: string, b: string): number {
  return ORDER.indexOf(a as HttpMethod) - ORDER.indexOf(b as HttpMethod);
}

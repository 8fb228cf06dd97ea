const GAVE_UP = 'given up before a slot was free (its deadline passed, or the service was closed)';

/**
 * At most `limit` calls under way at once; the others wait their turn, first come first served.
 * An offer list can find thousands of stale items at once, and without a gate each would be a
 * request to the source at the same moment, every 15 s per polling agent.
 */
export class CallGate {
  readonly #limit: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];
  #pumping = false;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /**
   * Runs `call` once a slot is free. Its slot is freed when it settles or when `signal` aborts
   * (the call's deadline, the service closing), whichever comes first: a call that ignores its
   * signal cannot keep a slot for good. A call whose signal aborts while it waits never runs.
   */
  run<T>(signal: AbortSignal, call: () => Promise<T> | T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = (): void => {
        this.#running += 1;
        let freed = false;
        const free = (): void => {
          if (freed) return;
          freed = true;
          signal.removeEventListener('abort', free);
          this.#running -= 1;
          this.#pump();
        };
        signal.addEventListener('abort', free, { once: true });
        let result: Promise<T>;
        try {
          result = Promise.resolve(call());
        } catch (error) {
          result = Promise.reject(error);
        }
        result.then(resolve, reject).finally(free);
      };
      if (signal.aborted) {
        reject(new Error(GAVE_UP));
        return;
      }
      // Not ahead of calls already waiting for the slot a pump is about to give them.
      if (this.#running < this.#limit && this.#waiting.length === 0) {
        start();
        return;
      }
      const waiting = (): void => {
        signal.removeEventListener('abort', giveUp);
        start();
      };
      const giveUp = (): void => {
        const index = this.#waiting.indexOf(waiting);
        if (index !== -1) this.#waiting.splice(index, 1);
        reject(new Error(GAVE_UP));
      };
      signal.addEventListener('abort', giveUp, { once: true });
      this.#waiting.push(waiting);
    });
  }

  /**
   * Starts waiting calls in the free slots once the timers due now have run: calls that waited as
   * long as the ones that just timed out are at their own deadline too, and must give up rather
   * than ask the source for an answer no one will wait for.
   */
  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    setImmediate(() => {
      this.#pumping = false;
      while (this.#running < this.#limit && this.#waiting.length > 0) this.#waiting.shift()?.();
    });
  }
}

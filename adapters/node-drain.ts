import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * How much of a body that will not be read (one over the size limit, or that of a request refused
 * for its Host) is read and thrown away, and for how long. Closing while the client is still
 * sending makes the kernel reset the connection, and a reset can destroy the answer (a 413, a
 * 400) before the client reads it (RFC 9112, 9.6). So the rest is drained instead; a body that goes
 * on past these bounds is cut off. Many clients read no answer before their upload is out, so
 * the size bound is generous: discarding costs no memory, and the time bound caps the work.
 */
export const OVERSIZED_BODY_DRAIN = { bytes: 64 * 1024 * 1024, milliseconds: 5_000 } as const;

/**
 * Drains the rest of the body. Settles `ended` once it has all been read (or the request is gone),
 * or `cut` past the bounds, with the request paused: the connection is then to end after the answer.
 */
export function drainRest(req: IncomingMessage): Promise<'ended' | 'cut'> {
  if (req.complete || req.readableEnded) return Promise.resolve('ended');
  return new Promise((resolve) => {
    let drained = 0;
    const stop = (outcome: 'ended' | 'cut'): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', ended);
      req.off('close', ended);
      resolve(outcome);
    };
    const ended = (): void => stop('ended');
    const cutOff = (): void => {
      req.pause();
      stop('cut');
    };
    const onData = (chunk: Buffer): void => {
      drained += chunk.length;
      if (drained > OVERSIZED_BODY_DRAIN.bytes) cutOff();
    };
    const timer = setTimeout(cutOff, OVERSIZED_BODY_DRAIN.milliseconds);
    timer.unref();
    req.on('data', onData);
    req.once('end', ended);
    req.once('close', ended);
    req.resume();
  });
}

/**
 * Past the drain's bounds the rest of the body is not waited for: the answer still goes out (a
 * reset may follow it, the best that can be done), then the connection ends.
 */
export function endAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('connection', 'close');
  else if (res.writableFinished) req.socket.destroy();
  else res.once('finish', () => req.socket.destroy());
}

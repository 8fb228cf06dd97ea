/**
 * The spec's Limits as numbers. Kept apart from the schemas that enforce them (schemas/common.ts
 * re-exports them) so that code needing only a bound, such as the id allocator the command line's
 * client commands use, does not load TypeBox's seven hundred modules to get it.
 */

export const INT32_MAX = 2147483647;

/** Spec Limits: description, details, note text and responses, in characters (code points). */
export const MAX_TEXT_LENGTH = 20000;

/** Spec Limits: task and assistance titles, in characters (code points). */
export const MAX_TITLE_LENGTH = 200;

/** Spec Limits: every estimate in minutes (tasks, assignees, assistance). */
export const MAX_MINUTES = 1_000_000;

/** Spec Limits: a task's `sequence`. */
export const MAX_SEQUENCE = 100_000;

/**
 * The spec's enumerations as plain lists. `schemas/common.ts` builds their schemas from these, and
 * the types are declared here rather than as `Static<...>` of those schemas: a published type that
 * names one (a provider's `PublishRequest`) would otherwise make every user's compiler check
 * TypeBox's own declarations, some ten seconds of type-checking for a program that never uses it.
 */
export const TASK_STATUSES = ['Ready', 'InProgress', 'Done'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const LIFECYCLES = ['floating', 'planned', 'inprogress', 'completed'] as const;
export type Lifecycle = (typeof LIFECYCLES)[number];

export const RESPONSE_STATES = ['open', 'responded', 'resolved'] as const;
export type ResponseState = (typeof RESPONSE_STATES)[number];

export const PRIORITY_NAMES = ['critical', 'high', 'normal', 'low'] as const;
export type PriorityName = (typeof PRIORITY_NAMES)[number];

export const ASSISTANCE_KINDS = ['Question', 'Review', 'Approval', 'Action'] as const;
export type AssistanceKind = (typeof ASSISTANCE_KINDS)[number];

export const RESOURCE_MODES = ['Independent', 'Collaboration'] as const;
export type ResourceMode = (typeof RESOURCE_MODES)[number];

export const BLOCKING_REASONS = ['unmet prerequisites', 'human assistance', 'external waiting'] as const;
export type BlockingReason = (typeof BLOCKING_REASONS)[number];

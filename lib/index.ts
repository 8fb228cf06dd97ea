export { createService, type Service } from './service.js';
export type { ServiceOptions } from './options.js';
export type { ProviderItem, ProviderPublication, ProviderReply, PublishRequest, SourceProvider } from './sources/provider.js';
export { httpSourceProvider, type HttpSourceProvider } from './sources/http-provider.js';
export type { ServiceRequest, ServiceResponse, ResponseMeta, HeaderValue } from './http/types.js';
export type { Logger } from './logger.js';
export { systemClock, manualClock, type Clock, type ManualClock } from './time/clock.js';
export { openApiDocument } from './schemas/openapi.js';
export { loadFixture, loadFixtureFile, FixtureError, type LoadSummary } from './fixtures/load.js';

import { buildIfStale } from './build.js';

// tap's `before` program (package.json): one build for the whole run, before any test file starts.
buildIfStale();

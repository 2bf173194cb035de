// save-only: src/saveImpl.ts saveImpl() with the NullStateProvider (src/saveOnly.ts): no state, so the key
// is the input and nothing counts as restored; a failure is a warning, never a failed step.
'use strict';
const core = require('@actions/core');
const cache = require('../store.js');

function saveImpl() {
  let cacheId = -1;
  try {
    if (!cache.store()) return cacheId; // l. 22-24
    if (!cache.validEvent()) { // l. 26-33
      core.info(`[warning]Event Validation Error: The event type ${process.env.GITHUB_EVENT_NAME} is not supported because it's not tied to a branch or tag ref.`);
      return cacheId;
    }
    const primaryKey = core.getInput('key'); // l. 37-39
    if (!primaryKey) {
      core.info('[warning]Key is not specified.');
      return cacheId;
    }
    const paths = cache.inputArray('path', { required: true }); // l. 57-59
    const crossOs = core.getInput('enableCrossOsArchive').toLowerCase() === 'true';
    cacheId = cache.saveCache(paths, primaryKey, crossOs); // l. 65-70
    if (cacheId !== -1) core.info(`Cache saved with key: ${primaryKey}`);
  } catch (error) {
    core.info(`[warning]${error.message}`); // l. 75-77
  }
  return cacheId;
}

if (saveImpl() === -1) core.warning('Cache save failed.'); // saveOnlyRun l. 84-87

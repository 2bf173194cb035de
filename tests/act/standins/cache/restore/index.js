// restore-only: src/restoreImpl.ts restoreImpl() with the NullStateProvider (src/restoreOnly.ts), whose
// setState writes the outputs cache-primary-key and cache-matched-key (src/stateProvider.ts l. 36-46).
'use strict';
const core = require('@actions/core');
const cache = require('../store.js');

function main() {
  try {
    if (!cache.store()) { // l. 17-20
      core.setOutput('cache-hit', 'false');
      return;
    }
    if (!cache.validEvent()) { // l. 23-29 (logWarning is core.info with a [warning] prefix)
      core.info(`[warning]Event Validation Error: The event type ${process.env.GITHUB_EVENT_NAME} is not supported because it's not tied to a branch or tag ref.`);
      return;
    }
    const primaryKey = core.getInput('key', { required: true }); // l. 31-32
    core.setOutput('cache-primary-key', primaryKey);
    const restoreKeys = cache.inputArray('restore-keys');
    const paths = cache.inputArray('path', { required: true });
    const crossOs = core.getInput('enableCrossOsArchive').toLowerCase() === 'true';
    const failOnMiss = core.getInput('fail-on-cache-miss').toLowerCase() === 'true';
    const lookupOnly = core.getInput('lookup-only').toLowerCase() === 'true';
    const cacheKey = cache.restoreCache(paths, primaryKey, restoreKeys, lookupOnly, crossOs); // l. 45-51
    if (!cacheKey) { // l. 53-68: cache-hit is deliberately left unset on a miss
      if (failOnMiss) {
        throw new Error(`Failed to restore cache entry. Exiting as fail-on-cache-miss is set. Input key: ${primaryKey}`);
      }
      core.info(`Cache not found for input keys: ${[primaryKey, ...restoreKeys].join(', ')}`);
      return;
    }
    core.setOutput('cache-matched-key', cacheKey); // l. 71
    core.setOutput('cache-hit', cache.exactKeyMatch(core.getInput('key', { required: true }), cacheKey).toString());
    core.info(lookupOnly ? `Cache found and can be restored from key: ${cacheKey}` : `Cache restored from key: ${cacheKey}`);
  } catch (error) {
    core.setFailed(error.message); // l. 86-90
  }
}

main();

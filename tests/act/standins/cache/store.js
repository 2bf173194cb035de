// act stand-in for actions/cache (restore/ and save/) at v5.0.5, 27d5ce7f107fe9357f9df03efb73ab90386fccae.
// It follows that commit's src/restoreImpl.ts, src/saveImpl.ts, src/stateProvider.ts and
// src/utils/actionUtils.ts step by step (line numbers below are of those files); GitHub's cache service
// is a folder on this host (ACT_STANDIN_CACHE_DIR), and the archive is a tar of the absolute paths.
'use strict';
const core = require('@actions/core');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

// actionUtils.ts isCacheFeatureAvailable (l. 66-80): no cache service -> the action does nothing.
function store() {
  return process.env.ACT_STANDIN_CACHE_DIR || '';
}

// actionUtils.ts isValidEvent (l. 35-37): GITHUB_REF must be set and non-empty.
function validEvent() {
  return Boolean(process.env.GITHUB_REF);
}

// actionUtils.ts getInputAsArray (l. 39-49): one entry per line, "! x" -> "!x", trimmed, empties dropped.
function inputArray(name, options) {
  return core.getInput(name, options).split('\n').map((s) => s.replace(/^!\s+/, '!').trim()).filter((x) => x !== '');
}

// actionUtils.ts isExactKeyMatch (l. 19-26): localeCompare with sensitivity "accent" (case-insensitive).
function exactKeyMatch(key, cacheKey) {
  return !!(cacheKey && cacheKey.localeCompare(key, undefined, { sensitivity: 'accent' }) === 0);
}

// @actions/cache checkKey: at most 512 characters and no comma, else a ValidationError.
function checkKey(key) {
  if (key.length > 512) throw new Error(`Key Validation Error: ${key} cannot be larger than 512 characters.`);
  if (!/^[^,]*$/.test(key)) throw new Error(`Key Validation Error: ${key} cannot contain commas.`);
}

// @actions/cache getCacheVersion: the paths and the compression decide the version; an entry saved with
// other paths (or, on Windows, without enableCrossOsArchive) is another version and never matches.
function version(paths, crossOs) {
  const parts = [...paths, 'tar-standin'];
  if (process.platform === 'win32' && !crossOs) parts.push('windows-only');
  return crypto.createHash('sha256').update(parts.join('|')).digest('hex');
}

function entries(paths, crossOs) {
  const folder = path.join(store(), version(paths, crossOs));
  if (!fs.existsSync(folder)) return [];
  return fs.readdirSync(folder).filter((name) => name.endsWith('.tar')).map((name) => {
    const file = path.join(folder, name);
    return { key: decodeURIComponent(name.slice(0, -4)), file, time: fs.statSync(file).mtimeMs };
  });
}

// The service's lookup: the primary key exactly, then each restore key as a prefix, newest first.
function lookup(paths, primaryKey, restoreKeys, crossOs) {
  const all = entries(paths, crossOs);
  const exact = all.find((entry) => entry.key === primaryKey);
  if (exact) return exact;
  for (const prefix of restoreKeys) {
    const matches = all.filter((entry) => entry.key.startsWith(prefix)).sort((a, b) => b.time - a.time);
    if (matches.length) return matches[0];
  }
  return null;
}

function restoreCache(paths, primaryKey, restoreKeys, lookupOnly, crossOs) {
  for (const key of [primaryKey, ...restoreKeys]) checkKey(key);
  const found = lookup(paths, primaryKey, restoreKeys, crossOs);
  if (!found) return undefined;
  if (!lookupOnly) execFileSync('tar', ['-xPf', found.file]);
  return found.key;
}

function saveCache(paths, key, crossOs) {
  checkKey(key);
  const existing = paths.filter((entry) => fs.existsSync(entry));
  if (existing.length === 0) {
    throw new Error('Path Validation Error: Path(s) specified in the action for caching do(es) not exist, ' +
      'hence no cache is being saved.');
  }
  const folder = path.join(store(), version(paths, crossOs));
  const file = path.join(folder, `${encodeURIComponent(key)}.tar`);
  if (fs.existsSync(file)) {
    // The service refuses a key that exists; @actions/cache logs it and returns -1.
    core.info(`Failed to save: Unable to reserve cache with key ${key}, another job may be creating this cache.`);
    return -1;
  }
  fs.mkdirSync(folder, { recursive: true });
  execFileSync('tar', ['-cPf', `${file}.partial`, ...existing]);
  fs.renameSync(`${file}.partial`, file);
  return 1;
}

module.exports = { store, validEvent, inputArray, exactKeyMatch, restoreCache, saveCache };

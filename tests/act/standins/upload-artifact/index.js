// act stand-in for actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f (v7.0.0): the same
// library call (@actions/artifact uploadArtifact, pinned in tests/act/package.json) against act's
// artifact server, after the file search of that commit's src/shared/search.ts ("search L<n>"), the
// input handling of src/upload/input-helper.ts ("inputs L<n>") and src/upload/upload-artifact.ts
// ("upload L<n>"). What it cannot do (wildcards, archive: false) fails loudly instead of being imitated.
'use strict';
const core = require('@actions/core');
const { DefaultArtifactClient } = require('@actions/artifact');
const fs = require('fs');
const path = require('path');

const NO_FILE_OPTIONS = ['warn', 'error', 'ignore']; // src/upload/constants.ts NoFileOptions

function visit(entry, includeHidden, files) {
  // @actions/glob internal-globber.ts: a hidden file or folder (name starting with '.') is skipped unless
  // include-hidden-files (search L14-21: excludeHiddenFiles: !includeHiddenFiles) -- the searched path too.
  if (!includeHidden && path.basename(entry).startsWith('.')) return;
  let stat;
  try {
    stat = fs.statSync(entry); // search L14-21: followSymbolicLinks, omitBrokenSymbolicLinks
  } catch (error) {
    if (error.code === 'ENOENT') return;
    throw error;
  }
  if (stat.isDirectory()) { // search L99-122: folders are searched, never uploaded
    for (const child of fs.readdirSync(entry).sort()) visit(path.join(entry, child), includeHidden, files);
  } else {
    files.push(entry);
  }
}

function leastCommonAncestor(searchPaths) { // search L32-80 (getMultiPathLCA)
  const split = searchPaths.map((p) => path.normalize(p).split(path.sep));
  const shortest = Math.min(...split.map((parts) => parts.length));
  const common = searchPaths[0].startsWith(path.sep) ? [path.sep] : [];
  for (let i = 0; i < shortest && split.every((parts) => parts[i] === split[0][i]); i++) common.push(split[0][i]);
  return path.join(...common);
}

async function run() {
  const name = core.getInput('name'); // inputs L9-13
  const searchPath = core.getInput('path', { required: true });
  const overwrite = core.getBooleanInput('overwrite');
  const includeHidden = core.getBooleanInput('include-hidden-files');
  const archive = core.getBooleanInput('archive');
  const ifNoFilesFound = core.getInput('if-no-files-found');
  if (!NO_FILE_OPTIONS.includes(ifNoFilesFound)) { // inputs L15-26
    core.setFailed(`Unrecognized if-no-files-found input. Provided: ${ifNoFilesFound}. ` +
      `Available options: ${NO_FILE_OPTIONS}`);
  }
  const options = {};
  const retention = core.getInput('retention-days'); // inputs L37-43, upload L73-75
  if (retention) {
    options.retentionDays = parseInt(retention, 10);
    if (isNaN(options.retentionDays)) core.setFailed('Invalid retention-days');
    if (!options.retentionDays) delete options.retentionDays; // 0: the default retention
  }
  const level = core.getInput('compression-level'); // inputs L45-55, upload L77-79
  if (level) {
    options.compressionLevel = parseInt(level, 10);
    if (isNaN(options.compressionLevel)) core.setFailed('Invalid compression-level');
    if (options.compressionLevel < 0 || options.compressionLevel > 9) {
      core.setFailed('Invalid compression-level. Valid values are 0-9');
    }
  }
  if (!archive) throw new Error('stand-in: archive: false is not in the pinned @actions/artifact');
  const searchPaths = searchPath.split('\n').map((line) => line.trim()).filter(Boolean)
    .map((entry) => path.resolve(process.env.GITHUB_WORKSPACE || process.cwd(), entry));
  if (searchPaths.some((entry) => /[*?[\]]/.test(entry) || entry.startsWith('!'))) {
    throw new Error('stand-in: wildcard patterns are not implemented; name files or folders');
  }
  const files = [];
  for (const entry of searchPaths) visit(entry, includeHidden, files);
  if (files.length === 0) { // upload L31-52
    const message = `No files were found with the provided path: ${searchPath}. No artifacts will be uploaded.`;
    if (ifNoFilesFound === 'error') core.setFailed(message);
    else if (ifNoFilesFound === 'warn') core.warning(message);
    else core.info(message);
    return;
  }
  // search L128-157: several search paths -> their least common ancestor; one file named as such -> its
  // folder; otherwise the one search path.
  let root = searchPaths[0];
  if (searchPaths.length > 1) root = leastCommonAncestor(searchPaths);
  else if (files.length === 1 && searchPaths[0] === files[0]) root = path.dirname(files[0]);
  const client = new DefaultArtifactClient();
  if (overwrite) { // upload L68-70, L11-23: best effort
    try { await client.deleteArtifact(name); } catch (error) { core.debug(`not deleted: ${error.message}`); }
  }
  const result = await client.uploadArtifact(name, files, root, options); // shared/upload-artifact.ts L11-16
  core.info(`Artifact ${name} has been successfully uploaded! Final size is ${result.size} bytes. ` +
    `Artifact ID is ${result.id}`);
  core.setOutput('artifact-id', result.id); // shared/upload-artifact.ts L21-28
  core.setOutput('artifact-digest', result.digest);
  const [owner, repo] = (process.env.GITHUB_REPOSITORY || '/').split('/');
  const server = process.env.GITHUB_SERVER_URL || 'https://github.com';
  core.setOutput('artifact-url', `${server}/${owner}/${repo}/actions/runs/${process.env.GITHUB_RUN_ID}/artifacts/${result.id}`);
  core.info(`upload-artifact stand-in: ${name} id ${result.id}, ${files.length} files, digest ${result.digest}`);
}

run().catch((error) => core.setFailed(error.message));

// act stand-in for actions/upload-artifact: the official library, the act artifact server, real bytes.
'use strict';
const core = require('@actions/core');
const { DefaultArtifactClient } = require('@actions/artifact');
const fs = require('fs');
const path = require('path');

function walk(entry, files) {
  const stat = fs.statSync(entry);
  if (stat.isDirectory()) {
    for (const child of fs.readdirSync(entry)) walk(path.join(entry, child), files);
  } else if (stat.isFile()) {
    files.push(entry);
  }
}

async function main() {
  const name = core.getInput('name');
  const entries = core.getInput('path').split('\n').map((line) => line.trim()).filter(Boolean)
    .map((entry) => path.resolve(process.env.GITHUB_WORKSPACE, entry));
  const files = [];
  for (const entry of entries) {
    if (fs.existsSync(entry)) walk(entry, files);
  }
  if (files.length === 0) {
    const mode = core.getInput('if-no-files-found');
    const message = `upload-artifact stand-in: no files found at ${entries.join(', ')}`;
    if (mode === 'error') core.setFailed(message);
    else if (mode === 'warn') core.warning(message);
    return;
  }
  // Same root rule as upload-artifact: a single folder is the root, otherwise the common parent.
  let root = entries.length === 1 && fs.statSync(entries[0]).isDirectory() ? entries[0] : path.dirname(files[0]);
  for (const file of files) {
    while (!file.startsWith(root + path.sep)) root = path.dirname(root);
  }
  const retention = parseInt(core.getInput('retention-days') || '0', 10);
  const result = await new DefaultArtifactClient().uploadArtifact(name, files, root,
    retention > 0 ? { retentionDays: retention } : {});
  core.setOutput('artifact-id', String(result.id));
  core.setOutput('artifact-digest', result.digest || '');
  core.info(`upload-artifact stand-in: ${name} id ${result.id}, ${files.length} files, ${result.size} bytes, digest ${result.digest}`);
}

main().catch((error) => core.setFailed(`upload-artifact stand-in: ${error.message}`));

// act stand-in for actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 (v5.0.0): copy a local repository
// (working tree at HEAD, or an exact commit). Output `commit` as that commit's src/git-source-provider.ts
// L264-265 (the checked-out HEAD's SHA); `ref` is not set (nothing here reads it).
'use strict';
const core = require('@actions/core');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

function git(dir, args, options = {}) {
  return execFileSync('git', ['-C', dir, ...args], { encoding: options.encoding || 'utf8', maxBuffer: 1 << 28 });
}

function copyWorkingTree(source, dest) {
  const listing = git(source, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  let copied = 0;
  for (const name of new Set(listing.split('\0').filter(Boolean))) {
    const from = path.join(source, name);
    let stat;
    try { stat = fs.lstatSync(from); } catch { continue; } // tracked but deleted in the working tree
    if (!stat.isFile()) continue;
    fs.mkdirSync(path.dirname(path.join(dest, name)), { recursive: true });
    fs.copyFileSync(from, path.join(dest, name));
    copied += 1;
  }
  return copied;
}

function main() {
  const repository = core.getInput('repository') || process.env.GITHUB_REPOSITORY;
  const ref = core.getInput('ref');
  const workspace = process.env.GITHUB_WORKSPACE;
  const dest = path.resolve(workspace, core.getInput('path') || '.');
  const map = JSON.parse(process.env.ACT_STANDIN_REPOSITORIES || '{}');
  const source = map[repository];
  if (!source) {
    core.setFailed(`checkout stand-in: no local copy of ${repository} (ACT_STANDIN_REPOSITORIES)`);
    return;
  }
  const head = git(source, ['rev-parse', 'HEAD']).trim();
  let commit;
  try {
    commit = ref ? git(source, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]).trim() : head;
  } catch {
    core.setFailed(`checkout stand-in: ${repository} has no commit for ref '${ref}'`);
    return;
  }
  fs.mkdirSync(dest, { recursive: true });
  if (commit === head) {
    const dirty = git(source, ['status', '--porcelain']).trim() !== '';
    const copied = copyWorkingTree(source, dest);
    core.info(`checkout stand-in: ${repository}@${commit} working tree (${copied} files, uncommitted changes: ${dirty})`);
  } else {
    const archive = git(source, ['archive', '--format=tar', commit], { encoding: 'buffer' });
    execFileSync('tar', ['-x', '-C', dest], { input: archive });
    core.info(`checkout stand-in: ${repository}@${commit} from git archive`);
  }
  core.setOutput('commit', commit);
}

try {
  main();
} catch (error) {
  core.setFailed(`checkout stand-in: ${error.message}`);
}

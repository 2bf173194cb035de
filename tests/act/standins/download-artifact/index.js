// act stand-in for actions/download-artifact: the official library against act's artifact server.
'use strict';
const core = require('@actions/core');
const { DefaultArtifactClient } = require('@actions/artifact');
const path = require('path');

function globToRegExp(glob) {
  return new RegExp('^' + glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$');
}

async function main() {
  const client = new DefaultArtifactClient();
  const name = core.getInput('name');
  const dest = path.resolve(process.env.GITHUB_WORKSPACE, core.getInput('path') || '.');
  const merge = core.getInput('merge-multiple') === 'true';
  const { artifacts } = await client.listArtifacts({ latest: true });
  const ids = core.getInput('artifact-ids').split(',').map((id) => id.trim()).filter(Boolean);
  if (name && ids.length) throw new Error('give name or artifact-ids, not both');
  let chosen = artifacts;
  if (ids.length) {
    chosen = ids.map((id) => {
      const found = artifacts.find((artifact) => String(artifact.id) === id);
      if (!found) throw new Error(`artifact id not found: ${id}`);
      return found;
    });
  } else if (name) {
    chosen = artifacts.filter((artifact) => artifact.name === name);
    if (chosen.length === 0) throw new Error(`artifact not found: ${name}`);
  } else if (core.getInput('pattern')) {
    const pattern = globToRegExp(core.getInput('pattern'));
    chosen = artifacts.filter((artifact) => pattern.test(artifact.name));
  }
  const onMismatch = core.getInput('digest-mismatch') || 'error';
  const reported = JSON.parse(process.env.ACT_STANDIN_EXPECTED_DIGESTS || '{}');
  for (const artifact of chosen) {
    const target = name || merge ? dest : path.join(dest, artifact.name);
    // As download-artifact v8: the SHA-256 of the zip bytes as the server stores them, against the
    // digest the server recorded at upload.
    // act's server records none, so the workflow's act-only step hands over the digests upload reported.
    let expected = artifact.digest || reported[String(artifact.id)] || undefined;
    // The library reports `sha256:<hex>`; upload-artifact's output is the bare hex.
    if (expected && !expected.startsWith('sha256:')) expected = `sha256:${expected}`;
    const result = await client.downloadArtifact(artifact.id, { path: target, expectedHash: expected });
    core.info(`download-artifact stand-in: ${artifact.name} (id ${artifact.id}) -> ${target}; ` +
      `stored zip compared with ${artifact.digest ? 'the server-recorded' : expected ? 'the upload-reported' : 'no'} ` +
      `digest ${expected || ''}: ${expected ? (result.digestMismatch ? 'MISMATCH' : 'equal') : 'not compared'}`);
    if (result.digestMismatch) {
      const message = `digest mismatch for ${artifact.name} (id ${artifact.id}): the stored zip is not what was uploaded`;
      if (onMismatch === 'error') throw new Error(message);
      if (onMismatch === 'warn') core.warning(message); else if (onMismatch === 'info') core.info(message);
    }
  }
  core.setOutput('download-path', dest);
}

main().catch((error) => core.setFailed(`download-artifact stand-in: ${error.message}`));

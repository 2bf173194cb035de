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
  let chosen = artifacts;
  if (name) {
    chosen = artifacts.filter((artifact) => artifact.name === name);
    if (chosen.length === 0) throw new Error(`artifact not found: ${name}`);
  } else if (core.getInput('pattern')) {
    const pattern = globToRegExp(core.getInput('pattern'));
    chosen = artifacts.filter((artifact) => pattern.test(artifact.name));
  }
  for (const artifact of chosen) {
    const target = name || merge ? dest : path.join(dest, artifact.name);
    await client.downloadArtifact(artifact.id, { path: target });
    core.info(`download-artifact stand-in: ${artifact.name} (id ${artifact.id}, ${artifact.size} bytes) -> ${target}`);
  }
  core.setOutput('download-path', dest);
}

main().catch((error) => core.setFailed(`download-artifact stand-in: ${error.message}`));

// act stand-in for actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c (v8.0.1).
// It follows that commit's src/download-artifact.ts line by line ("v8 L<n>" below names the line it
// mirrors), over the same library calls (@actions/artifact, pinned in tests/act/package.json) against
// the artifact service act serves. What the stand-in cannot do (the public REST API with github-token,
// skip-decompress, which the pinned library lacks) fails loudly instead of being imitated.
'use strict';
const os = require('os');
const path = require('path');
const core = require('@actions/core');
const { DefaultArtifactClient } = require('@actions/artifact');
const { Minimatch } = require('minimatch'); // v8 L6, same version as its package-lock.json (10.1.1)

const DIGEST_MISMATCH = ['ignore', 'info', 'warn', 'error']; // v8 src/constants.ts DigestMismatchBehavior

async function run() {
  const inputs = { // v8 L19-35
    name: core.getInput('name'),
    path: core.getInput('path'),
    token: core.getInput('github-token'),
    pattern: core.getInput('pattern'),
    mergeMultiple: core.getBooleanInput('merge-multiple'),
    artifactIds: core.getInput('artifact-ids'),
    skipDecompress: core.getBooleanInput('skip-decompress'),
    digestMismatch: core.getInput('digest-mismatch') || 'error',
  };
  if (!DIGEST_MISMATCH.includes(inputs.digestMismatch)) { // v8 L37-43
    throw new Error(`Invalid value for 'digest-mismatch': '${inputs.digestMismatch}'. ` +
      `Valid options are: ${DIGEST_MISMATCH.join(', ')}`);
  }
  if (inputs.token) throw new Error('stand-in: github-token (the public REST API) is not served under act');
  if (inputs.skipDecompress) throw new Error('stand-in: skip-decompress is not in the pinned @actions/artifact');
  // v8 L45-47: the default is the workspace. The runner starts a node action in GITHUB_WORKSPACE, so the
  // path.resolve(inputs.path) of L62 is relative to it; act's host mode does not, hence the explicit base.
  if (!inputs.path) inputs.path = process.env.GITHUB_WORKSPACE || process.cwd();
  if (inputs.path.startsWith('~')) inputs.path = inputs.path.replace('~', os.homedir()); // v8 L49-51
  if (inputs.name && inputs.artifactIds) { // v8 L54-58
    throw new Error("Inputs 'name' and 'artifact-ids' cannot be used together. Please specify only one.");
  }
  const isSingleArtifactDownload = !!inputs.name; // v8 L60
  const resolvedPath = path.resolve(process.env.GITHUB_WORKSPACE || process.cwd(), inputs.path); // v8 L62
  const client = new DefaultArtifactClient();

  let artifacts = [];
  if (isSingleArtifactDownload) { // v8 L85-101
    const { artifact } = await client.getArtifact(inputs.name);
    if (!artifact) throw new Error(`Artifact '${inputs.name}' not found`);
    artifacts = [artifact];
  } else if (inputs.artifactIds) { // v8 L102-147
    const idList = inputs.artifactIds.split(',').map((id) => id.trim()).filter((id) => id !== '');
    if (idList.length === 0) throw new Error("No valid artifact IDs provided in 'artifact-ids' input");
    const ids = idList.map((id) => {
      const numeric = parseInt(id, 10);
      if (isNaN(numeric)) throw new Error(`Invalid artifact ID: '${id}'. Must be a number.`);
      return numeric;
    });
    const listed = await client.listArtifacts({ latest: true });
    artifacts = listed.artifacts.filter((artifact) => ids.includes(artifact.id));
    if (artifacts.length === 0) throw new Error('None of the provided artifact IDs were found');
    if (artifacts.length < ids.length) { // v8 L139-145: a missing id is a warning, not a failure
      const found = artifacts.map((a) => a.id);
      core.warning(`Could not find the following artifact IDs: ${ids.filter((id) => !found.includes(id)).join(', ')}`);
    }
  } else { // v8 L148-173
    const listed = await client.listArtifacts({ latest: true });
    artifacts = listed.artifacts;
    if (inputs.pattern) {
      const matcher = new Minimatch(inputs.pattern);
      artifacts = artifacts.filter((artifact) => matcher.match(artifact.name));
    }
  }
  for (const artifact of artifacts) { // v8 L176-183
    core.info(`- ${artifact.name} (ID: ${artifact.id}, Size: ${artifact.size}, Expected Digest: ${artifact.digest})`);
  }

  const digestMismatches = [];
  for (const artifact of artifacts) {
    // v8 L189-194: ONE artifact (by name, or the only one found), or merge-multiple, unpacks into `path`
    // itself; only several, unmerged, get a folder each named after the artifact.
    const target = isSingleArtifactDownload || inputs.mergeMultiple || artifacts.length === 1
      ? resolvedPath : path.join(resolvedPath, artifact.name);
    // v8 L195: the digest the artifact service listed, nothing else (act's service lists none).
    const outcome = await client.downloadArtifact(artifact.id, { path: target, expectedHash: artifact.digest });
    core.info(`download-artifact stand-in: ${artifact.name} (id ${artifact.id}) -> ${target}`);
    if (outcome.digestMismatch) { // v8 L211-229
      digestMismatches.push(artifact.name);
      const message = `Artifact '${artifact.name}' digest validation failed. Please verify the integrity of the artifact.`;
      if (inputs.digestMismatch === 'info') core.info(message);
      else if (inputs.digestMismatch === 'warn') core.warning(message);
    }
  }
  if (digestMismatches.length > 0 && inputs.digestMismatch === 'error') { // v8 L233-242: after all downloads
    throw new Error(`Digest validation failed for artifact(s): ${digestMismatches.join(', ')}. ` +
      "Use 'digest-mismatch: warn' to continue on mismatch.");
  }
  core.info(`Total of ${artifacts.length} artifact(s) downloaded`);
  core.setOutput('download-path', resolvedPath); // v8 L245
}

run().catch((error) => core.setFailed(`Unable to download artifact(s): ${error.message}`)); // v8 L249-251

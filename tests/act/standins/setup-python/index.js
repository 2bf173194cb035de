// act stand-in for actions/setup-python: no installation; says which python the job will really use.
'use strict';
const core = require('@actions/core');
const { execFileSync } = require('child_process');

try {
  const requested = core.getInput('python-version');
  const out = execFileSync('python', ['-c', 'import platform, sys; print(platform.python_version()); print(sys.executable)'],
    { encoding: 'utf8' }).trim().split('\n');
  const [version, executable] = out;
  if (requested && !(version === requested || version.startsWith(requested + '.'))) {
    core.warning(`setup-python stand-in: ${requested} requested, the job runs the host's Python ${version}`);
  }
  core.setOutput('python-version', version);
  core.setOutput('python-path', executable);
  core.info(`setup-python stand-in: python ${version} (no installation done)`);
} catch (error) {
  core.setFailed(`setup-python stand-in: no python on PATH: ${error.message}`);
}

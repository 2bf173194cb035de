// act stand-in for actions/setup-python@e797f83bcb11b83ae66e0230d6156d7c80228e7c (v6.0.0): no installation;
// says which python the job will really use. Outputs as that commit's src/find-python.ts L222-223
// (python-version, python-path); its environment exports (pythonLocation, Python_ROOT_DIR, PATH, L151-174)
// are not made: nothing here reads them, and the python on PATH is already the one reported.
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

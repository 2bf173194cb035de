// act stand-in for actions/attest: nothing can be signed here, so it fails rather than pretend.
'use strict';
const core = require('@actions/core');

core.setFailed('attest stand-in: act has no OIDC token, Sigstore signer or attestations API; nothing was signed');

"""The common leaf every part imports (stdlib only, importing nothing else of ours): the strict JSON reader, the
file primitives, names, the value checks rules share, provenance."""

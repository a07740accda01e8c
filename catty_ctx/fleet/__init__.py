"""One command over many sessions (docs/architecture.md#fleet): the ROOT runner and its exit
rule, forked workers, the Dask cluster, captured stderr, URL ROOTs.

Names live in the modules; importing one of them does not load the others."""

"""Hybrid deployment (issue 19): containers through Slurm's OCI support, isolated sensitive work, serverless
functions on warm pilot jobs, and the form admission chooses per workload class.

- :mod:`.images`: the image store (OCI layouts, one directory per image name, no registry);
- :mod:`.cache`: the content-addressed image-to-bundle cache on the nodes (atomic, locked, pruned by age);
- :mod:`.oci`: ``oci.conf`` rendered from the site for the Slurm version (22.05 and 23.02+ syntax);
- :mod:`.form`: the pure admission step that turns a class's form into job changes, with the reason;
- :mod:`.audit`, :mod:`.wipe`, :mod:`.programs`: sensitive jobs' audit record, the power-cycle before reuse,
  and the node programs (Prolog/Epilog) that record and drain;
- :mod:`.fn`: the function gateway, its pilot jobs and their scaler (a service).
"""

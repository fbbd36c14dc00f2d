"""Vendor hardware profiles: best-practice BIOS settings per node model as data (``profiles/*.yaml``), applied
through the BMC's Redfish BIOS settings (pending until the next reboot), read back and audited for drift."""

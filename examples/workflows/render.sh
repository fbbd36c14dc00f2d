#!/bin/bash
# The render pipeline of render.yaml as a batch script: hetsched dag plan examples/workflows/render.sh --site demo
#HETSCHED workflow render
#HETSCHED task split cores=2 mem_gb=2 runtime_s=20 time=00:05:00
echo split on $(hostname)
#HETSCHED task frames after=split array=8 cores=4 mem_gb=4 arch=x86_64,aarch64 class=video-render runtime_s=60 time=00:10:00
echo frame $HETSCHED_TASK_INDEX on $(hostname)
#HETSCHED task encode after=frames cores=4 mem_gb=8 gpu=1:a100|h100 runtime_s=40 time=00:10:00
echo encode on $(hostname)
#HETSCHED task merge after=encode runtime_s=10 time=00:05:00
echo merge on $(hostname)

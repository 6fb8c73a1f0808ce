// How this process was started: the `ffn` command's rule for going across processes on its
// own (tools/ffn/across_processes.hpp), read from the launcher's environment before MPI is
// initialised.
#pragma once

namespace ffn {

// True when this process was started by mpirun/mpiexec (OpenMPI's OMPI_COMM_WORLD_SIZE or
// a PMI launcher's PMI_SIZE or PMIX_SIZE is set) with more than one process: the CLI then
// splits work across the processes on its own.
bool launched_with_several_processes();

}  // namespace ffn

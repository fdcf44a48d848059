from mpi4py import MPI
import array
c = MPI.COMM_WORLD
x = array.array('d', [c.Get_rank() + 1.0] * 4)
y = array.array('d', [0.0] * 4)
c.Allreduce(x, y, op=MPI.SUM)
print(MPI.Get_library_version().splitlines()[0], "rank", c.Get_rank(), "of", c.Get_size(), list(y))

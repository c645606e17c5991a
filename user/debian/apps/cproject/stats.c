#include <math.h>
#include "stats.h"

double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

double stddev(const double *v, int n)
{
    double m = mean(v, n), s = 0;
    for (int i = 0; i < n; i++)
        s += (v[i] - m) * (v[i] - m);
    return sqrt(s / n);
}
